//! The integration tests of this crate, one module per file, linked into one test binary
//! (docs/ARCHITECTURE.md, "Tests").

mod bad_input;
mod browser;
mod corpus;
mod explain_cli;
mod first_hour;
mod fleet;
mod hostile_inputs;
mod hostile_inputs2;
mod interrupted_run;
mod kill9;
mod links;
mod model_cli;
mod predict;
mod predict_run;
mod report_cli;
mod sim_artifacts;
