//! Slice labels over many pages for the `l2.slices.function` probe (docs/L2_SLICES.md, "The
//! function in a run"): an adaptive design that needs the counters between stages, so it runs only
//! with CUPTI in a child that keeps its pages (`memscope hammer-lines --serve`). Stage 1 tests every
//! pair of a seed sample (fit::design_packed) and takes one representative line per slice found;
//! stage 2 classifies every other line against all representatives at once (one kernel per line,
//! fit::design_classify); the lines on slices none of them holds get every pair tested among
//! themselves and their own representatives. Slice labels are global: the same label on two pages
//! is the same slice (as seen from the hammering SM), which a page's partition alone cannot say.

use super::counters::{decoded_maxes, per_kernel, scales, Counters};
use super::fit::{self, Batch};
use super::hammer::{self, HammerPlan, HammerReport};
use crate::gpu::{GpuError, GpuResult};

/// Something that runs experiments and returns each planned kernel's counters: the serving child
/// on a GPU, a simulator in tests. `lines` are offsets from the first page's base; batches index
/// into them.
pub trait Counting {
    fn count(&mut self, lines: &[u64], batches: &[Batch]) -> GpuResult<Vec<Counters>>;
}

/// What the map found.
#[derive(Debug, Clone, PartialEq)]
pub struct SliceMap {
    /// Slice label per line (None: an unclear or contradicting answer).
    pub label: Vec<Option<usize>>,
    /// Distinct labels.
    pub labels: usize,
    /// Kernels run, and stages (child round trips).
    pub kernels: usize,
    pub stages: usize,
}

/// Label `lines` (offsets from the first page's base): every pair of the first `seed` lines, then
/// the rest against one representative per slice found; the lines none of them matched repeat
/// the two steps among themselves (every pair of the first `seed` of them, the rest classified
/// against all representatives) until none is left. `unit` accesses per weight unit, `ops` the
/// operation slots each kernel uses.
pub fn map_lines(src: &mut dyn Counting, lines: &[u64], seed: usize, unit: u64, ops: &[usize]) -> GpuResult<SliceMap> {
    let n = lines.len();
    let mut label: Vec<Option<usize>> = vec![None; n];
    let mut reps: Vec<usize> = Vec::new();
    let mut st = Stage { src, lines, unit, ops, kernels: 0, stages: 0 };
    let mut todo: Vec<usize> = (0..n).collect();
    while !todo.is_empty() {
        let cut = seed.max(1).min(todo.len());
        st.all_pairs(&todo[..cut], &mut label, &mut reps)?;
        let queue: Vec<usize> = todo[cut..].iter().copied().filter(|&i| label[i].is_none()).collect();
        if reps.is_empty() {
            break;
        }
        todo = st.classify(&queue, &mut label, &reps)?;
    }
    Ok(SliceMap { label, labels: reps.len(), kernels: st.kernels, stages: st.stages })
}

/// The state of one mapping: the source, the lines, the design's unit and operations, the work.
struct Stage<'a> {
    src: &'a mut dyn Counting,
    lines: &'a [u64],
    unit: u64,
    ops: &'a [usize],
    kernels: usize,
    stages: usize,
}

impl Stage<'_> {
    /// Every line of `queue` against all representatives in one stage (one kernel per line): a
    /// line that matches one takes its label, one that matches none is returned, an unclear or
    /// contradicting answer leaves the line undetermined.
    fn classify(&mut self, queue: &[usize], label: &mut [Option<usize>], reps: &[usize]) -> GpuResult<Vec<usize>> {
        if queue.is_empty() {
            return Ok(Vec::new());
        }
        // The lines of the queue followed by the representatives' lines.
        let mut cl_lines: Vec<u64> = queue.iter().map(|&i| self.lines[i]).collect();
        cl_lines.extend(reps.iter().map(|&r| self.lines[r]));
        let rep_pos: Vec<usize> = (queue.len()..queue.len() + reps.len()).collect();
        let q_pos: Vec<usize> = (0..queue.len()).collect();
        let batches = fit::design_classify(&q_pos, &rep_pos, self.unit, self.ops, 0);
        let counters = self.src.count(&cl_lines, &batches)?;
        self.kernels += fit::kernel_count(&batches);
        self.stages += 1;
        let maxes = decoded_maxes(&counters, &batches, &scales(&counters, &batches));
        let mut unmatched = Vec::new();
        for (qi, &line) in queue.iter().enumerate() {
            let answers: Vec<Option<Option<usize>>> = batches
                .iter()
                .zip(&maxes)
                .filter(|(b, _)| b.kernel == qi)
                .map(|(b, &m)| {
                    fit::decode_classify(m, self.unit, b.members.len() - 1)
                        .map(|j| j.map(|j| b.members[1 + j] - queue.len()))
                })
                .collect();
            if answers.iter().any(|a| a.is_none()) {
                continue; // unclear: left undetermined
            }
            let hits: Vec<usize> = answers.iter().flatten().flatten().copied().collect();
            match hits.len() {
                0 => unmatched.push(line),
                1 => label[line] = label[reps[hits[0]]],
                _ => {} // two representatives matched: a contradiction, left undetermined
            }
        }
        Ok(unmatched)
    }

    /// Every pair among `subset`: each class found becomes a new label with its first line as its
    /// representative.
    fn all_pairs(&mut self, subset: &[usize], label: &mut [Option<usize>], reps: &mut Vec<usize>) -> GpuResult<()> {
        if subset.is_empty() {
            return Ok(());
        }
        if subset.len() == 1 {
            label[subset[0]] = Some(reps.len());
            reps.push(subset[0]);
            return Ok(());
        }
        let sub: Vec<u64> = subset.iter().map(|&i| self.lines[i]).collect();
        let batches = fit::design_packed(sub.len(), self.unit, self.ops);
        let counters = self.src.count(&sub, &batches)?;
        self.kernels += fit::kernel_count(&batches);
        self.stages += 1;
        let maxes = decoded_maxes(&counters, &batches, &scales(&counters, &batches));
        let a = fit::assign(sub.len(), &batches, &maxes, self.unit, true);
        let first = reps.len();
        for (k, c) in a.class.iter().enumerate() {
            if let Some(c) = c {
                label[subset[k]] = Some(first + c);
            }
        }
        for c in 0..a.classes {
            let rep = (0..sub.len()).find(|&k| a.class[k] == Some(c)).expect("every class has a line");
            reps.push(subset[rep]);
        }
        Ok(())
    }
}

/// The serving child (`memscope hammer-lines --serve`, reading CUPTI itself): started with the
/// first stage's plan, then one plan per stage on its stdin, one report per plan on its stdout.
pub struct ServingChild {
    command: Option<std::process::Command>,
    child: Option<std::process::Child>,
    reports: Option<std::sync::mpsc::Receiver<String>>,
    dir: std::path::PathBuf,
    /// What every plan carries besides its kernels (SM, warps, pages, counters, metrics).
    pub template: HammerPlan,
    pub timeout: std::time::Duration,
    /// The wait for any report, before the per-kernel allowance.
    pub base_timeout: std::time::Duration,
    /// Every report, in order (for the probe's records).
    pub reports_kept: Vec<HammerReport>,
}

impl ServingChild {
    /// `command` starts memscope itself with LD_LIBRARY_PATH set for CUPTI; `device` its GPU.
    pub fn new(mut command: std::process::Command, device: usize, template: HammerPlan) -> GpuResult<Self> {
        let dir = std::env::temp_dir().join(format!("memscope-slices-map-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| GpuError::invalid(format!("{}: {e}", dir.display())))?;
        command.args(["hammer-lines", "--serve", "--device", &device.to_string(), "--plan"]).arg(dir.join("plan.json"));
        Ok(ServingChild {
            command: Some(command),
            child: None,
            reports: None,
            dir,
            template,
            timeout: std::time::Duration::from_secs(120),
            base_timeout: std::time::Duration::from_secs(60),
            reports_kept: Vec::new(),
        })
    }

    fn send(&mut self, plan: &HammerPlan) -> GpuResult<HammerReport> {
        use std::io::{BufRead, Write};
        use std::process::Stdio;
        let text = serde_json::to_string(plan).map_err(|e| GpuError::invalid(e.to_string()))?;
        if let Some(mut cmd) = self.command.take() {
            std::fs::write(self.dir.join("plan.json"), &text).map_err(|e| GpuError::invalid(e.to_string()))?;
            let mut child = cmd
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| GpuError::invalid(format!("cannot start the serving child: {e}")))?;
            let out = child.stdout.take().ok_or_else(|| GpuError::invalid("the serving child has no stdout"))?;
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let mut cur: Option<String> = None;
                for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                    if line == hammer::REPORT_BEGIN {
                        cur = Some(String::new());
                    } else if line == hammer::REPORT_END {
                        if tx.send(cur.take().unwrap_or_default()).is_err() {
                            break;
                        }
                    } else if let Some(c) = cur.as_mut() {
                        c.push_str(&line);
                    }
                }
            });
            self.child = Some(child);
            self.reports = Some(rx);
        } else {
            let stdin = self
                .child
                .as_mut()
                .and_then(|c| c.stdin.as_mut())
                .ok_or_else(|| GpuError::invalid("the serving child has no stdin"))?;
            writeln!(stdin, "{text}")
                .and_then(|_| stdin.flush())
                .map_err(|e| GpuError::invalid(format!("to the serving child: {e}")))?;
        }
        let rx = self.reports.as_ref().ok_or_else(|| GpuError::invalid("the serving child has no reports"))?;
        let got = rx.recv_timeout(self.timeout).map_err(|_| {
            GpuError::invalid(format!(
                "the serving child gave no report within {} s (or ended)",
                self.timeout.as_secs()
            ))
        })?;
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&got) {
            if let Some(e) = v.get("error").and_then(|e| e.as_str()) {
                return Err(GpuError::invalid(format!("the serving child: {e}")));
            }
        }
        serde_json::from_str(&got).map_err(|e| GpuError::invalid(format!("the serving child's report: {e}")))
    }
}

impl Counting for ServingChild {
    fn count(&mut self, lines: &[u64], batches: &[Batch]) -> GpuResult<Vec<Counters>> {
        let plan = HammerPlan { kernels: super::plan_kernels(lines, batches), ..self.template.clone() };
        // A stage of thousands of kernels (about 25 ms each through CUPTI on the H200) may take
        // minutes: the wait grows with the plan.
        self.timeout = self.base_timeout + std::time::Duration::from_millis(100 * plan.kernels.len() as u64);
        let report = self.send(&plan)?;
        let kernels = super::cupti_kernels(&self.template.metrics, &report);
        let c = per_kernel(&report, &kernels, plan.kernels.len());
        self.reports_kept.push(report);
        c
    }
}

impl Drop for ServingChild {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            drop(c.stdin.take()); // end of input: the child ends
            let started = std::time::Instant::now();
            while started.elapsed() < std::time::Duration::from_secs(10) {
                if let Ok(Some(_)) = c.try_wait() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
