//! memscope-report: the renderers of a results document (crates/results): the terminal table,
//! Markdown, CSV and the HTML report, comparisons, the fleet view and the simulator's animation.
//! Renderers return text or bytes and never touch disk; the four that render a whole document
//! meet at one interface (`Writer`).

pub mod animation;
pub mod clocks;
pub mod compare;
pub mod csv;
pub mod diagram;
pub mod fleet;
pub mod fleet_view;
pub mod html;
pub mod hygiene;
pub mod links_view;
pub mod markdown;
pub mod nvbandwidth;
pub mod roofline;
pub mod svg;
pub mod table;
pub mod units;
pub mod writer;

pub use writer::{Csv, Html, Markdown, Terminal, Writer};
