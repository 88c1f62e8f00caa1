//! The results document of `memscope ceilings|model|fusion|batch` (seed 003; docs/MODEL.md): the GPU
//! opened once; the probes bw, launch and peak run on it through the session into a `memscope/1`
//! document (the provenance and NVML readings `memscope run` records); the model's ceilings taken
//! from that document's findings in strict per-class mode; then every part the command measures
//! ("checks", "evaluation", "fusion", "batch", "compose") put into the document's `model`
//! section, the file rewritten by the session's writer after each part.

use crate::error::CliError;
use memscope_core::Probe;
use memscope_cuda::CudaTarget;
use memscope_model::bottleneck::SessionCeilings;
use memscope_model::run_ceilings::FloorFallback;
use memscope_results::model_section::{ceilings_of_run, ModelSection};
use memscope_results::{Results, RunPhase};
use memscope_session::{Session, Snapshot};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// The probes whose findings are the model's ceilings, in the order they run (bandwidth first
/// brings the clocks up, as the model's own measurement used to).
pub fn ceiling_probes() -> Vec<Box<dyn Probe>> {
    use memscope_cuda::probes::{BwProbe, LaunchProbe, PeakProbe};
    vec![Box::new(BwProbe), Box::new(LaunchProbe), Box::new(PeakProbe)]
}

/// Where the document goes without --out: `memscope-out/<command>.json` (the folder created).
pub fn default_out(command: &str) -> PathBuf {
    PathBuf::from("memscope-out").join(format!("{command}.json"))
}

/// `--out` (or the default) checked before any measurement: exit 2 naming it.
pub fn resolve_out(out: &Option<PathBuf>, command: &str) -> Result<PathBuf, CliError> {
    let path = match out {
        Some(p) => p.clone(),
        None => {
            let p = default_out(command);
            if let Some(dir) = p.parent() {
                std::fs::create_dir_all(dir)
                    .map_err(|e| CliError::usage(format!("--out {}: cannot create folder: {e}", dir.display())))?;
            }
            p
        }
    };
    if path.as_os_str() == "-" {
        return Err(CliError::usage("--out -: the results document is a file; give a file name"));
    }
    crate::run_guard::check_output_file("--out", &path)?;
    Ok(path)
}

/// The model section of a document: its ceilings from the primary target's findings, every
/// launch class from its own `launch.op.<class>_floor_s` (a missing class is an error naming its
/// key and the command that measures it; no stand-in).
pub fn section_from(doc: &Results) -> Result<ModelSection, CliError> {
    let (_, run) = ceilings_of_run(doc, FloorFallback::PerClassOnly)
        .map_err(|e| CliError::failure(format!("the model's ceilings from this session's findings: {e}")))?;
    Ok(ModelSection::new(run))
}

/// The document being written and the session that writes it.
pub struct ModelDoc {
    session: Session,
    pub doc: Results,
    pub path: PathBuf,
    id: String,
    snapshot: Option<(String, Snapshot)>,
}

impl ModelDoc {
    /// Run the ceiling probes on `target` (GPU `device`) into a new document at `path`, then take
    /// the model's ceilings from its findings. A failed probe or a missing ceiling ends the
    /// command (the document is written, finished, with what was measured).
    pub fn measure(target: &mut CudaTarget, device: usize, path: &Path, quiet: bool) -> Result<Self, CliError> {
        use memscope_core::Target;
        let session = Session::new(false, Box::new(crate::progress::Bars { quiet }));
        let id = format!("cuda:{device}");
        let probes = ceiling_probes();
        session.ledger().set_plan(probes.iter().map(|p| format!("{}@{id}", p.key())).collect());
        crate::run_guard::watch(session.ledger().clone());
        let doc = Results::new(crate::provenance::tool(), target.info(), crate::provenance::environment());
        let snapshot = Some(crate::cmd_run::nvml_snapshot(device));
        let mut md = ModelDoc { session, doc, path: path.to_path_buf(), id, snapshot };
        memscope_session::snapshot(&mut md.doc, &md.id, &md.snapshot, "before");
        let failures =
            md.session.run_on(target, &md.id, &probes, &mut md.doc, &md.path).map_err(crate::cmd_run::session_error)?;
        if !failures.is_empty() {
            return Err(md.fail(format!("the ceilings' probes failed: {}", failures.join("; "))));
        }
        match section_from(&md.doc) {
            Ok(section) => md.doc.model = Some(section),
            Err(e) => return Err(md.fail(e.to_string())),
        }
        md.write(RunPhase::InProgress)?;
        Ok(md)
    }

    /// The ceilings the model uses (those of the section).
    pub fn ceilings(&self) -> Result<SessionCeilings, CliError> {
        self.doc
            .model
            .as_ref()
            .map(|m| m.ceilings.clone())
            .ok_or_else(|| CliError::failure("the document has no model section"))
    }

    /// Put `part` into the model section and rewrite the file.
    pub fn put(&mut self, part: &str, value: &impl Serialize) -> Result<(), CliError> {
        let v = serde_json::to_value(value).map_err(|e| CliError::failure(format!("model part {part}: {e}")))?;
        let section = self.doc.model.as_mut().ok_or_else(|| CliError::failure("the document has no model section"))?;
        section.parts.insert(part.to_string(), v);
        self.write(RunPhase::InProgress)
    }

    fn write(&mut self, phase: RunPhase) -> Result<(), CliError> {
        self.session.write(&self.path, &mut self.doc, phase).map_err(crate::cmd_run::session_error)
    }

    /// Finish the document: NVML after, the end time, marked finished.
    pub fn finish(&mut self) -> Result<(), CliError> {
        memscope_session::snapshot(&mut self.doc, &self.id, &self.snapshot, "after");
        self.doc.environment.insert("finished_at".into(), serde_json::json!(crate::provenance::now()));
        self.write(RunPhase::Finished)?;
        eprintln!("wrote {}", self.path.display());
        Ok(())
    }

    /// Finish the document with what was measured and return `why` as the command's error.
    pub fn fail(&mut self, why: String) -> CliError {
        if let Err(e) = self.finish() {
            return CliError::failure(format!("{why}; and {e}"));
        }
        CliError::failure(why)
    }

    /// Finish the document whatever `r` is; `r`'s error (or the write's) is the command's.
    pub fn end(&mut self, r: Result<(), CliError>) -> Result<(), CliError> {
        match r {
            Ok(()) => self.finish(),
            Err(e) => Err(self.fail(e.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memscope_core::{keys, Confidence, Finding, Target};

    /// A document of one target (a simulated GPU's info stands in for the GPU's) with `findings`.
    fn doc_with(findings: &[(String, f64, &str)]) -> Results {
        let info = memscope_sim::SimTarget::from_preset("rtx4090").unwrap().info();
        let id = info.id.clone();
        let mut doc = Results::new(crate::provenance::tool(), info, Default::default());
        for (k, v, unit) in findings {
            let mut f = Finding::number(*v, unit, "synthetic", Confidence::High);
            f.target = Some(id.clone());
            doc.findings.insert(k.clone(), f);
        }
        doc
    }

    fn all_findings() -> Vec<(String, f64, &'static str)> {
        let mut v = vec![
            (keys::bw_bytes_per_s("copy"), 4.2e12, "bytes/s"),
            (keys::bw_bytes_per_s("read"), 4.6e12, "bytes/s"),
            (keys::bw_bytes_per_s("write"), 4.7e12, "bytes/s"),
            (keys::peak_flops_per_s("fp32"), 5.1e13, "flops/s"),
            (keys::peak_flops_per_s("fp16"), 7.5e14, "flops/s"),
            (keys::LAUNCH_FLOOR_S.to_string(), 2.0e-6, "s"),
        ];
        for (i, c) in keys::LAUNCH_CLASSES.iter().enumerate() {
            v.push((keys::launch_class_floor_s(c), 3e-6 + i as f64 * 1e-7, "s"));
        }
        v
    }

    #[test]
    fn the_section_is_assembled_from_the_documents_findings() {
        let mut doc = doc_with(&all_findings());
        let section = section_from(&doc).unwrap();
        assert_eq!(section.ceilings.bandwidth_bytes_per_s["copy"], 4.2e12);
        assert_eq!(section.ceilings.peak_flops_per_s["fp16"], 7.5e14);
        for (i, c) in keys::LAUNCH_CLASSES.iter().enumerate() {
            assert_eq!(section.ceilings.launch_floor_s[*c], 3e-6 + i as f64 * 1e-7, "{c}");
            let input = section.inputs.iter().find(|x| x.ceiling == format!("launch_floor_s.{c}")).unwrap();
            assert_eq!(input.key, keys::launch_class_floor_s(c));
            assert!(input.stands_in_for.is_none());
        }
        assert!(section.parts.is_empty());
        // Into the document, through JSON and back: the same section, the parts absent.
        doc.model = Some(section.clone());
        let back = Results::from_json(&memscope_results::json::to_bytes(&doc)).unwrap();
        assert_eq!(back.model, Some(section));
    }

    #[test]
    fn a_missing_class_floor_is_an_error_naming_it_not_the_empty_kernels_floor() {
        let v: Vec<_> =
            all_findings().into_iter().filter(|(k, _, _)| *k != keys::launch_class_floor_s("softmax")).collect();
        let e = section_from(&doc_with(&v)).unwrap_err();
        assert_eq!(e.exit_code(), 1);
        let msg = e.to_string();
        assert!(msg.contains("launch.op.softmax_floor_s") && msg.contains("memscope run -p launch"), "{msg}");
        assert!(!msg.contains('\n'));
    }

    #[test]
    fn the_default_out_names_the_command_and_a_bad_out_is_usage() {
        assert_eq!(default_out("model"), PathBuf::from("memscope-out/model.json"));
        let dir = tempfile::tempdir().unwrap();
        let e = resolve_out(&Some(dir.path().join("no/such/x.json")), "model").unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert_eq!(resolve_out(&Some(PathBuf::from("-")), "model").unwrap_err().exit_code(), 2);
        let ok = dir.path().join("m.json");
        assert_eq!(resolve_out(&Some(ok.clone()), "model").unwrap(), ok);
    }
}
