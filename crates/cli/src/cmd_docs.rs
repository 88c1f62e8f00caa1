//! `memscope completions SHELL` and `memscope man [COMMAND...]`: a shell completion script
//! (clap_complete) and man pages (clap_mangen), all generated from the CLI definition in main.rs,
//! so they list exactly the subcommands and options this binary accepts. Every command has its own
//! page (`memscope man run`, `memscope man sim vadd`), and a page lists its commands by the
//! `memscope man ...` line that prints theirs.

use crate::error::{CliError, CliResult};
use std::io::Write;

#[derive(clap::Args, Debug)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    pub shell: clap_complete::Shell,
}

/// Write the completion script for `args.shell` to stdout.
pub fn completions(args: CompletionsArgs, mut cli: clap::Command) -> CliResult {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cli, "memscope", &mut out);
    emit(&out)
}

#[derive(clap::Args, Debug)]
pub struct ManArgs {
    /// A command for its own page: `memscope man run`, `memscope man sim vadd`. Without one, the
    /// page of memscope, which lists every command's page.
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Write the man page (roff) of `args.command` (or of memscope) to stdout.
pub fn man(args: ManArgs, cli: clap::Command) -> CliResult {
    let page = man_page(&args.command, cli)?;
    emit(&page)
}

/// The roff of the page of the command at `path` (empty: memscope itself).
pub fn man_page(path: &[String], cli: clap::Command) -> Result<Vec<u8>, CliError> {
    let mut cmd = cli;
    let mut words = vec![cmd.get_name().to_string()];
    for name in path {
        let visible: Vec<String> =
            cmd.get_subcommands().filter(|c| !c.is_hide_set()).map(|c| c.get_name().to_string()).collect();
        let Some(sub) = cmd.find_subcommand(name).filter(|c| !c.is_hide_set()).cloned() else {
            let whose = words.join(" ");
            return Err(CliError::usage(if visible.is_empty() {
                format!("man {}: `{whose}` has no commands", path.join(" "))
            } else {
                format!("man {}: `{whose}` has no command {name:?} (commands: {})", path.join(" "), visible.join(", "))
            }));
        };
        words.push(name.clone());
        cmd = sub;
    }
    let cmd = if path.is_empty() { cmd } else { cmd.display_name(words.join("-")).bin_name(words.join(" ")) };
    let man = clap_mangen::Man::new(cmd.clone());
    let mut out = Vec::new();
    let fail = |e: std::io::Error| CliError::failure(format!("cannot render the man page: {e}"));
    man.render_title(&mut out).map_err(fail)?;
    man.render_name_section(&mut out).map_err(fail)?;
    man.render_synopsis_section(&mut out).map_err(fail)?;
    man.render_description_section(&mut out).map_err(fail)?;
    man.render_options_section(&mut out).map_err(fail)?;
    // (clap_mangen would list "memscope-run(1)", a page no man database holds: each command's
    // page is printed by memscope itself)
    let subs: Vec<&clap::Command> = cmd.get_subcommands().filter(|c| !c.is_hide_set()).collect();
    if !subs.is_empty() {
        out.extend_from_slice(b".SH COMMANDS\n");
        for sub in subs {
            let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
            let mut call = vec![words[0].as_str(), "man"];
            call.extend(words[1..].iter().map(String::as_str));
            call.push(sub.get_name());
            let line = format!(".TP\n\\fB{}\\fR\n{}\n", call.join(" "), roff_text(&about));
            out.extend_from_slice(line.as_bytes());
        }
    }
    if cmd.get_after_help().is_some() || cmd.get_after_long_help().is_some() {
        man.render_extra_section(&mut out).map_err(fail)?;
    }
    if cmd.get_version().is_some() {
        man.render_version_section(&mut out).map_err(fail)?;
    }
    Ok(out)
}

/// Text as a roff line: backslashes escaped, no leading control character.
fn roff_text(s: &str) -> String {
    let t = s.replace('\\', "\\e").replace('\n', " ");
    if t.starts_with('.') || t.starts_with('\'') {
        format!("\\&{t}")
    } else {
        t
    }
}

fn emit(bytes: &[u8]) -> CliResult {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(bytes).and_then(|_| stdout.flush()).map_err(|e| CliError::failure(format!("stdout: {e}")))
}
