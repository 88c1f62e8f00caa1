//! Which probes a run runs (docs/ARCHITECTURE.md): the asked keys, checked against the registry, and,
//! transitively, the probes they declare in `Probe::needs` (docs/ADDING_A_PROBE.md), in registry order.

use memscope_core::Probe;

/// An asked probe key that no probe has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no probe {asked:?} (accepted: {accepted})")]
pub struct UnknownProbe {
    pub asked: String,
    /// Every known key, comma-separated.
    pub accepted: String,
}

/// The asked probe keys and, transitively, the probes they declare in `Probe::needs`.
pub fn with_needs(all: &[Box<dyn Probe>], asked: &[String]) -> Vec<String> {
    let mut wanted: Vec<String> = asked.to_vec();
    let mut i = 0;
    while i < wanted.len() {
        if let Some(p) = all.iter().find(|p| p.key() == wanted[i]) {
            for need in p.needs() {
                if !wanted.iter().any(|w| w == need) {
                    wanted.push(need.to_string());
                }
            }
        }
        i += 1;
    }
    wanted
}

/// The probes of `all` (in its order) that `asked` names, every probe when `asked` is empty; the
/// probes they need are added unless `continuing` (a continued run reads the earlier findings
/// from its results file).
pub fn select(
    all: Vec<Box<dyn Probe>>,
    asked: &[String],
    continuing: bool,
) -> Result<Vec<Box<dyn Probe>>, UnknownProbe> {
    if asked.is_empty() {
        return Ok(all);
    }
    let keys: Vec<&str> = all.iter().map(|p| p.key()).collect();
    for a in asked {
        if !keys.contains(&a.as_str()) {
            return Err(UnknownProbe { asked: a.clone(), accepted: keys.join(", ") });
        }
    }
    let wanted = if continuing { asked.to_vec() } else { with_needs(&all, asked) };
    Ok(all.into_iter().filter(|p| wanted.iter().any(|a| a == p.key())).collect())
}
