//! `memscope run` under a scheduler: with Slurm's SLURM_PROCID (or SLURM_JOB_ID alone: the batch
//! script, rank 0) or Open MPI's OMPI_COMM_WORLD_RANK set, each process writes under
//! `--out DIR/<host>-rank<N>/`, so `srun memscope run --out DIR` on many nodes never has two
//! processes on one folder, and the results record `environment.scheduler` (kind, rank, job id)
//! for `memscope merge`. Without those variables, or with MEMSCOPE_NO_SCHEDULER=1 (one plain
//! folder inside a job, e.g. tests run in a batch script), nothing changes.

use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

/// Where a process of a scheduled job stands.
#[derive(Debug, Clone, PartialEq)]
pub struct Placement {
    /// "slurm" or "openmpi".
    pub kind: &'static str,
    pub rank: u64,
    pub job_id: Option<String>,
    pub host: String,
}

/// The placement from the environment (`var` reads a variable), or None outside a scheduler.
/// A rank that is not a number is ignored (the variable is not the scheduler's).
pub fn placement(var: impl Fn(&str) -> Option<String>, host: &str) -> Option<Placement> {
    if var("MEMSCOPE_NO_SCHEDULER").is_some_and(|v| v == "1") {
        return None;
    }
    let num = |name: &str| var(name).and_then(|v| v.trim().parse::<u64>().ok());
    let job_id = var("SLURM_JOB_ID").filter(|j| !j.is_empty());
    let (kind, rank) = if let Some(r) = num("SLURM_PROCID") {
        ("slurm", r)
    } else if let Some(r) = num("OMPI_COMM_WORLD_RANK") {
        ("openmpi", r)
    } else if job_id.is_some() {
        ("slurm", 0)
    } else {
        return None;
    };
    Some(Placement { kind, rank, job_id, host: host.to_string() })
}

/// The folder of one process: `out/<host>-rank<N>` (the host name kept to letters, digits, `.`,
/// `_` and `-`).
pub fn folder(out: &Path, p: &Placement) -> PathBuf {
    let host: String =
        p.host.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '-' }).collect();
    out.join(format!("{host}-rank{}", p.rank))
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown-host".into())
}

/// Apply the scheduler's placement to a run's `--out` (not to a continued run, whose folder was
/// placed by its parent) and return what to record as `environment.scheduler`.
pub fn place(out: &mut PathBuf, continuing: bool) -> Option<Value> {
    if continuing {
        return None;
    }
    let p = placement(|k| std::env::var(k).ok(), &host_name())?;
    *out = folder(out, &p);
    let mut m = Map::new();
    m.insert("kind".into(), json!(p.kind));
    m.insert("rank".into(), json!(p.rank));
    if let Some(j) = &p.job_id {
        m.insert("job_id".into(), json!(j));
    }
    m.insert("folder".into(), json!(out.display().to_string()));
    Some(Value::Object(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
    }

    #[test]
    fn slurm_openmpi_and_none() {
        let p = placement(env(&[("SLURM_PROCID", "3"), ("SLURM_JOB_ID", "77")]), "node 1").unwrap();
        assert_eq!((p.kind, p.rank, p.job_id.as_deref()), ("slurm", 3, Some("77")));
        assert_eq!(folder(Path::new("out"), &p), Path::new("out/node-1-rank3"));
        let p = placement(env(&[("OMPI_COMM_WORLD_RANK", "5")]), "h").unwrap();
        assert_eq!((p.kind, p.rank), ("openmpi", 5));
        assert_eq!(placement(env(&[("SLURM_JOB_ID", "9")]), "h").unwrap().rank, 0);
        assert_eq!(placement(env(&[]), "h"), None);
        assert_eq!(placement(env(&[("SLURM_PROCID", "x")]), "h"), None);
        assert_eq!(placement(env(&[("SLURM_PROCID", "1"), ("MEMSCOPE_NO_SCHEDULER", "1")]), "h"), None);
    }
}
