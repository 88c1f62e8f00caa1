//! NVML readings (SM and memory clocks, temperature, power, throttle reasons) taken before and after
//! each GPU probe (docs/ADDING_A_PROBE.md, measurement discipline: never change clocks, read and record them). A
//! sustained matrix product on the H200 hits its power cap and drops the SM clock well below
//! 1980 MHz (../shared/notes/gpu-machine.md): such moves become probe warnings.

use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::Nvml;
use serde_json::{json, Value};
use std::sync::OnceLock;

fn nvml() -> Option<&'static Nvml> {
    static N: OnceLock<Option<Nvml>> = OnceLock::new();
    N.get_or_init(|| std::panic::catch_unwind(|| Nvml::init().ok()).ok().flatten()).as_ref()
}

/// One reading of a GPU's state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reading {
    pub sm_clock_mhz: Option<u32>,
    pub mem_clock_mhz: Option<u32>,
    pub temperature_c: Option<u32>,
    pub power_w: Option<f64>,
    pub power_limit_w: Option<f64>,
    /// Throttle (clock event) reasons, by name.
    pub throttle: Vec<String>,
}

impl Reading {
    pub fn to_json(&self) -> Value {
        json!({
            "sm_clock_mhz": self.sm_clock_mhz, "mem_clock_mhz": self.mem_clock_mhz,
            "temperature_c": self.temperature_c, "power_w": self.power_w,
            "power_limit_w": self.power_limit_w, "throttle_reasons": self.throttle,
        })
    }
}

/// Read GPU `ordinal` (matched by PCI bus id when given, else by index). None without NVML.
pub fn read(ordinal: usize, pci_bus_id: Option<&str>) -> Option<Reading> {
    let n = nvml()?;
    let dev = match pci_bus_id {
        Some(id) => n.device_by_pci_bus_id(id).or_else(|_| n.device_by_index(ordinal as u32)),
        None => n.device_by_index(ordinal as u32),
    }
    .ok()?;
    let throttle = dev
        .current_throttle_reasons()
        .map(|r| r.iter_names().map(|(name, _)| name.to_string()).collect())
        .unwrap_or_default();
    Some(Reading {
        sm_clock_mhz: dev.clock_info(Clock::SM).ok(),
        mem_clock_mhz: dev.clock_info(Clock::Memory).ok(),
        temperature_c: dev.temperature(TemperatureSensor::Gpu).ok(),
        power_w: dev.power_usage().ok().map(|mw| mw as f64 / 1000.0),
        power_limit_w: dev.enforced_power_limit().ok().map(|mw| mw as f64 / 1000.0),
        throttle,
    })
}

/// A GPU's PCIe link as NVML reports it (the link the host <-> device findings name).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PcieLink {
    pub current_gen: Option<u32>,
    pub current_width: Option<u32>,
    pub max_gen: Option<u32>,
    pub max_width: Option<u32>,
}

/// The PCIe link of GPU `ordinal` (matched by PCI bus id when given). None without NVML.
pub fn pcie_link(ordinal: usize, pci_bus_id: Option<&str>) -> Option<PcieLink> {
    let n = nvml()?;
    let dev = match pci_bus_id {
        Some(id) => n.device_by_pci_bus_id(id).or_else(|_| n.device_by_index(ordinal as u32)),
        None => n.device_by_index(ordinal as u32),
    }
    .ok()?;
    Some(PcieLink {
        current_gen: dev.current_pcie_link_gen().ok(),
        current_width: dev.current_pcie_link_width().ok(),
        max_gen: dev.max_pcie_link_gen().ok(),
        max_width: dev.max_pcie_link_width().ok(),
    })
}

/// The NVML state of GPU `ordinal` as JSON for the results' environment (null fields where NVML
/// is missing), plus the driver version.
pub fn nvml_snapshot(ordinal: usize) -> Value {
    match read(ordinal, None) {
        Some(r) => {
            let mut v = r.to_json();
            if let Some(n) = nvml() {
                v["driver_version"] = json!(n.sys_driver_version().ok());
            }
            v
        }
        None => json!({"nvml": "unavailable (libnvidia-ml.so.1 not loadable)"}),
    }
}

/// Warnings when the SM clock moved by more than 5% between two readings, or a throttle reason
/// other than idle appeared.
pub fn drift_warnings(before: &Reading, after: &Reading) -> Vec<String> {
    let mut w = Vec::new();
    if let (Some(a), Some(b)) = (before.sm_clock_mhz, after.sm_clock_mhz) {
        let rel = (b as f64 - a as f64).abs() / (a.max(1) as f64);
        if rel > 0.05 {
            w.push(format!("SM clock moved during the probe: {a} MHz before, {b} MHz after (NVML)"));
        }
    }
    let notable: Vec<&String> =
        after.throttle.iter().filter(|t| !t.contains("IDLE") && !t.contains("APPLICATIONS_CLOCKS_SETTING")).collect();
    if !notable.is_empty() {
        let names: Vec<&str> = notable.iter().map(|s| s.as_str()).collect();
        w.push(format!("throttle reasons after the probe: {}", names.join(", ")));
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn clock_drift_is_warned() {
        let a = Reading { sm_clock_mhz: Some(1980), ..Default::default() };
        let b = Reading { sm_clock_mhz: Some(1500), throttle: vec!["SW_POWER_CAP".into()], ..Default::default() };
        let w = drift_warnings(&a, &b);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("1980") && w[0].contains("1500"));
        assert!(drift_warnings(&a, &a).is_empty());
    }
}
