//! How library code starts a helper process of memscope itself (docs/ARCHITECTURE.md): the binary registers,
//! once at start-up, how to run itself; library crates never assume which executable they run in
//! (the slice probe's profiled hammer child, the runner's continue-in-a-fresh-process path).

use std::process::Command;
use std::sync::OnceLock;

static SELF_COMMAND: OnceLock<fn() -> Command> = OnceLock::new();

/// Called once by the binary at start-up: how to start memscope itself (arguments still to add).
/// Later calls are ignored.
pub fn register_self_command(make: fn() -> Command) {
    let _ = SELF_COMMAND.set(make);
}

/// A command that starts memscope itself, arguments still to add; `None` when no binary registered
/// one (library use, tests): the caller then says the step needs the memscope binary.
pub fn self_command() -> Option<Command> {
    SELF_COMMAND.get().map(|make| make())
}

/// The reason a caller gives when `self_command` is `None`.
pub const NO_SELF_COMMAND: &str =
    "this program did not register how to start memscope itself (memscope_core::helper::register_self_command): \
     run it through the memscope binary";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registered_command_is_returned_and_a_second_registration_is_ignored() {
        fn first() -> Command {
            Command::new("first-program")
        }
        fn second() -> Command {
            Command::new("second-program")
        }
        register_self_command(first);
        register_self_command(second);
        let cmd = self_command().expect("registered");
        assert_eq!(cmd.get_program(), "first-program");
    }
}
