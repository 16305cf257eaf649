//! Progress bars for long phases, drawn on stderr only when stdout is a terminal.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub struct Bars {
    visible: bool,
    bars: Mutex<HashMap<String, ProgressBar>>,
}

impl Bars {
    pub fn new(quiet: bool) -> Self {
        Bars {
            visible: !quiet && std::io::stdout().is_terminal(),
            bars: Mutex::new(HashMap::new()),
        }
    }
}

impl aps5_graph::Progress for Bars {
    fn update(&self, phase: &str, done: u64, total: u64) {
        if !self.visible || total == 0 {
            return;
        }
        let mut bars = self.bars.lock().unwrap();
        let bar = bars.entry(phase.to_string()).or_insert_with(|| {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            let template = if phase == "hashing" {
                "{prefix:>8} [{bar:40}] {bytes}/{total_bytes} {bytes_per_sec} {eta}"
            } else {
                "{prefix:>8} [{bar:40}] {pos}/{len}"
            };
            bar.set_style(
                ProgressStyle::with_template(template)
                    .expect("template")
                    .progress_chars("=> "),
            );
            bar.set_prefix(phase.to_string());
            bar
        });
        bar.set_length(total);
        bar.set_position(done);
    }

    fn finish(&self, phase: &str) {
        if let Some(bar) = self.bars.lock().unwrap().remove(phase) {
            bar.finish_and_clear();
        }
    }
}
