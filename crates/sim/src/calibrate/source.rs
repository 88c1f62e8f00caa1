//! Where each field of a calibrated hierarchy came from (docs/SIMULATORS.md): measured (a finding key),
//! read from the driver (a key of the results' `target.details`, or `target.units`), derived
//! from those by a stated rule, or defaulted from the base preset with the reason. One row per
//! hierarchy field; the rows become the hierarchy's `provenance` map and `sim calibrate`'s table.

use serde::Serialize;
use std::collections::BTreeMap;

/// The kind of source of one field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A finding of the run.
    Measured,
    /// What the driver reported (results `target.details`, `target.units`).
    Driver,
    /// Computed from measured or driver values by the rule in `detail`.
    Derived,
    /// The base preset's value.
    Default,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Measured => "measured",
            Kind::Driver => "driver",
            Kind::Derived => "derived",
            Kind::Default => "default",
        }
    }
}

/// One field's row: its value as written, the kind of source, and the key or reason.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Dotted hierarchy field ("l2.sets_per_slice").
    pub field: String,
    /// The value written, as text.
    pub value: String,
    pub kind: Kind,
    /// The finding or details key, the rule, or why the default was kept.
    pub detail: String,
}

/// Rows by field, in field order.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    rows: BTreeMap<String, Row>,
}

impl Sources {
    /// Set (or replace) a field's row.
    pub fn set(&mut self, field: &str, value: impl ToString, kind: Kind, detail: impl Into<String>) {
        let row = Row { field: field.to_string(), value: value.to_string(), kind, detail: detail.into() };
        self.rows.insert(field.to_string(), row);
    }

    /// Whether a field has a row.
    pub fn has(&self, field: &str) -> bool {
        self.rows.contains_key(field)
    }

    /// All rows, by field name.
    pub fn rows(&self) -> Vec<Row> {
        self.rows.values().cloned().collect()
    }

    /// The `provenance` map of the hierarchy JSON: field -> "KIND: value (detail)".
    pub fn provenance(&self) -> BTreeMap<String, String> {
        self.rows
            .values()
            .map(|r| (r.field.clone(), format!("{}: {} ({})", r.kind.as_str(), r.value, r.detail)))
            .collect()
    }
}
