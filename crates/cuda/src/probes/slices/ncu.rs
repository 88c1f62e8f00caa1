//! Nsight Compute driven from outside the process for the `l2.slices` probe (seed 000 appendix,
//! "The L2 slice function": ncu's per-slice sector counter gives only min, max, avg and sum over the
//! slices, never the slice index). Finds `ncu`, runs it on the hidden `memscope hammer-lines` child
//! and parses its CSV (`--csv --print-units base`) into per-kernel metric values.

use super::hammer::HammerOp;
use crate::gpu::{GpuError, GpuResult};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Per-slice L2 read sectors from the SMs' TEX units (the max-counter metric).
pub const TEX_READ: &str = "lts__t_sectors_srcunit_tex_op_read";
/// Per-slice L2 sectors arriving over the fabric between the two L2 partitions.
pub const FABRIC: &str = "lts__t_sectors_srcunit_ltcfabric";

/// The per-slice L2 sector counter of one operation from the SMs' TEX units.
pub fn tex_metric(op: HammerOp) -> String {
    format!("lts__t_sectors_srcunit_tex_op_{}", op.name())
}

/// The metrics asked for: max and sum of each operation's counter (the max decodes an experiment,
/// the sum gives the sectors counted per access), the read counter's avg (sum / avg is the number
/// of lts instances), and max and sum of the fabric counter.
pub fn metric_list(ops: &[HammerOp]) -> String {
    let mut m: Vec<String> = Vec::new();
    for &op in ops {
        m.push(format!("{}.max", tex_metric(op)));
        m.push(format!("{}.sum", tex_metric(op)));
    }
    if !ops.contains(&HammerOp::Read) {
        m.push(format!("{TEX_READ}.sum"));
    }
    m.push(format!("{TEX_READ}.avg"));
    m.push(format!("{FABRIC}.max"));
    m.push(format!("{FABRIC}.sum"));
    m.join(",")
}

/// `ncu` on PATH, else under /usr/local/cuda/bin.
pub fn find_ncu() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> =
        std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect()).unwrap_or_default();
    dirs.push(PathBuf::from("/usr/local/cuda/bin"));
    dirs.into_iter().map(|d| d.join("ncu")).find(|p| p.is_file())
}

/// The ncu command line (arguments after the ncu path) profiling `memscope hammer-lines --plan
/// plan`: `child` is the command that starts memscope itself (its program and any arguments it
/// already has); `ops` the operations whose counters are read.
pub fn ncu_args(child: &std::process::Command, plan: &Path, device: usize, ops: &[HammerOp]) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "--csv".into(),
        "--print-units".into(),
        "base".into(),
        "--clock-control".into(),
        "none".into(),
        "--cache-control".into(),
        "none".into(),
        "-k".into(),
        format!("regex:{}", super::hammer::KERNEL),
        "--metrics".into(),
        metric_list(ops),
    ];
    args.push(child.get_program().to_string_lossy().into_owned());
    args.extend(child.get_args().map(|a| a.to_string_lossy().into_owned()));
    args.extend([
        "hammer-lines".into(),
        "--plan".into(),
        plan.display().to_string(),
        "--device".into(),
        device.to_string(),
    ]);
    args
}

/// What one ncu run gave: stdout (CSV and the child's report), stderr, success.
pub struct NcuRun {
    pub stdout: String,
    pub stderr: String,
    pub ok: bool,
    pub command: String,
}

/// Run ncu, killing it after `timeout`; Err when it cannot be started or ran out of time.
pub fn run_ncu(ncu: &Path, args: &[String], timeout: std::time::Duration) -> GpuResult<NcuRun> {
    let mut cmd = Command::new(ncu);
    cmd.args(args);
    run_command(cmd, timeout)
}

/// Run a command (ncu, or the child reading CUPTI itself), killing it after `timeout`; its stdout
/// and stderr kept whole. Err when it cannot be started or ran out of time.
pub fn run_command(mut cmd: Command, timeout: std::time::Duration) -> GpuResult<NcuRun> {
    use std::io::Read;
    use std::process::Stdio;
    let args: Vec<String> = cmd.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
    let program = cmd.get_program().to_string_lossy().into_owned();
    let command = format!("{program} {}", args.join(" "));
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| GpuError::invalid(format!("cannot start {program}: {e}")))?;
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let out_t = drain(child.stdout.take().map(|r| Box::new(r) as Box<dyn Read + Send>));
    let err_t = drain(child.stderr.take().map(|r| Box::new(r) as Box<dyn Read + Send>));
    let start = std::time::Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if start.elapsed() > timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(GpuError::invalid(format!("did not finish within {} s: {command}", timeout.as_secs())));
            }
            Ok(None) => std::thread::sleep(std::time::Duration::from_millis(10)),
            Err(e) => return Err(GpuError::invalid(format!("waiting for {program}: {e}"))),
        }
    };
    Ok(NcuRun {
        stdout: out_t.join().unwrap_or_default(),
        stderr: err_t.join().unwrap_or_default(),
        ok: status.success(),
        command,
    })
}

/// Why an ncu run gave no counters, in one line (permission errors are named).
pub fn failure_reason(run: &NcuRun) -> String {
    let all = format!("{}\n{}", run.stdout, run.stderr);
    if all.contains("ERR_NVGPUCTRPERM") {
        return "ncu has no permission to read the GPU performance counters (ERR_NVGPUCTRPERM): run as root or allow \
                non-admin profiling (NVreg_RestrictProfilingToAdminUsers=0)"
            .into();
    }
    let line = all
        .lines()
        .find(|l| l.contains("==ERROR==") || l.contains("memscope:"))
        .or_else(|| all.lines().rev().find(|l| !l.trim().is_empty()))
        .unwrap_or("no output");
    format!("ncu gave no counters: {}", line.trim())
}

/// Metric values of one profiled kernel (ncu's result ID, in launch order).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct KernelMetrics {
    pub id: usize,
    pub values: BTreeMap<String, f64>,
}

/// Split one CSV line into fields (double-quoted, "" escapes a quote).
fn csv_fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// A metric value as ncu prints it with `--print-units base` ("1,631", "0.74", "262,144").
fn number(text: &str) -> Option<f64> {
    text.trim().replace(',', "").parse::<f64>().ok()
}

/// Parse ncu's `--csv` output (lines of other text around it are skipped): one entry per result ID,
/// sorted by ID. Errors when no header or no metric row is found.
pub fn parse_csv(text: &str) -> GpuResult<Vec<KernelMetrics>> {
    let mut header: Option<Vec<String>> = None;
    let mut by_id: BTreeMap<usize, KernelMetrics> = BTreeMap::new();
    for line in text.lines() {
        let l = line.trim();
        if !l.starts_with('"') {
            continue;
        }
        let f = csv_fields(l);
        if f.first().map(|s| s.as_str()) == Some("ID") {
            header = Some(f);
            continue;
        }
        let Some(h) = &header else { continue };
        let col = |name: &str| h.iter().position(|x| x == name);
        let (Some(ci), Some(cn), Some(cv)) = (col("ID"), col("Metric Name"), col("Metric Value")) else {
            return Err(GpuError::invalid("ncu CSV header lacks ID, Metric Name or Metric Value"));
        };
        if f.len() != h.len() {
            continue;
        }
        let Ok(id) = f[ci].trim().parse::<usize>() else { continue };
        let Some(v) = number(&f[cv]) else { continue };
        by_id
            .entry(id)
            .or_insert_with(|| KernelMetrics { id, values: BTreeMap::new() })
            .values
            .insert(f[cn].clone(), v);
    }
    if header.is_none() {
        return Err(GpuError::invalid("no ncu CSV header in the output"));
    }
    if by_id.is_empty() {
        return Err(GpuError::invalid("ncu CSV has no metric values"));
    }
    Ok(by_id.into_values().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real output: ncu 2025.3.1 on the H200, the first two kernels of the committed run
    /// (results/h200/l2-slices; the child's report shortened to two records).
    const SAMPLE: &str = include_str!("slices_ncu_sample.csv");

    #[test]
    fn the_child_is_the_self_command_with_its_own_arguments() {
        let mut child = std::process::Command::new("/opt/memscope/bin/memscope");
        child.arg("--quiet");
        let args = ncu_args(&child, Path::new("/tmp/plan.json"), 3, &[HammerOp::Read]);
        let at = args.iter().position(|a| a == "/opt/memscope/bin/memscope").expect("the program");
        assert_eq!(args[at + 1..], ["--quiet", "hammer-lines", "--plan", "/tmp/plan.json", "--device", "3"]);
        assert!(args[..at].iter().any(|a| a == "--metrics"), "ncu's options come before the child");
    }

    #[test]
    fn every_operation_has_its_max_and_sum() {
        let all = metric_list(&HammerOp::ALL);
        for op in ["read", "write", "atom", "red"] {
            assert!(all.contains(&format!("lts__t_sectors_srcunit_tex_op_{op}.max")), "{all}");
            assert!(all.contains(&format!("lts__t_sectors_srcunit_tex_op_{op}.sum")), "{all}");
        }
        assert!(all.contains(&format!("{TEX_READ}.avg")) && all.contains(&format!("{FABRIC}.max")));
        let read = metric_list(&[HammerOp::Read]);
        assert_eq!(read.split(',').count(), 5, "the one-operation design asks for what it always did: {read}");
    }

    #[test]
    fn parses_the_real_h200_sample() {
        let k = parse_csv(SAMPLE).unwrap();
        assert_eq!(k.iter().map(|x| x.id).collect::<Vec<_>>(), vec![0, 1]);
        let v = &k[0].values;
        assert_eq!(v.len(), 5);
        assert_eq!(v[&format!("{TEX_READ}.max")], 131_398.0);
        assert_eq!(v[&format!("{TEX_READ}.sum")], 262_100.0);
        assert_eq!(v[&format!("{TEX_READ}.avg")], 2_788.30);
        assert_eq!(v[&format!("{FABRIC}.sum")], 1_506.0);
        assert_eq!(k[1].values[&format!("{TEX_READ}.max")], 131_073.0);
        let r = super::super::hammer::parse_report(SAMPLE).unwrap();
        assert!(r.alloc_2mib_aligned);
        assert_eq!(r.records.len(), 2);
    }

    #[test]
    fn thousands_separators_quotes_and_noise_lines() {
        let text = "==PROF== Connected\nMEMSCOPE-HAMMER-REPORT-BEGIN\n{}\n\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n\
                    \"0\",\"k\",\"a.sum\",\"sector\",\"1,631\"\n\"0\",\"k\",\"a.avg\",\"sector\",\"0.74\"\n\
                    \"1\",\"say \"\"hi\"\"\",\"a.sum\",\"sector\",\"262,144\"\n==PROF== Disconnected\n";
        let k = parse_csv(text).unwrap();
        assert_eq!(k[0].values["a.sum"], 1631.0);
        assert_eq!(k[0].values["a.avg"], 0.74);
        assert_eq!(k[1].values["a.sum"], 262144.0);
        assert!(parse_csv("no csv here").is_err());
    }

    #[test]
    fn permission_errors_are_named() {
        let run = NcuRun {
            stdout: "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission".into(),
            stderr: String::new(),
            ok: false,
            command: String::new(),
        };
        assert!(failure_reason(&run).contains("ERR_NVGPUCTRPERM"));
    }
}
