//! Simulator configurations from memscope results (docs/SIMULATORS.md): `accel_sim` writes a GPGPU-Sim /
//! Accel-Sim `gpgpusim.config` over a named public base (`base`), `options` parses that format
//! and lists the option names public configurations use. Pure: returns text, never writes.

pub mod accel_sim;
pub mod base;
pub mod options;
