//! A churn soak of the default profile: random pod and node churn, preemption and
//! binding cycles on worker threads, checked against an independent model every few
//! thousand attempts (see `schedkit::testing::soak`). Prints one summary line.
//!
//! ```text
//! cargo run --release --example soak -- --pods 1000000
//! cargo run --release --example soak -- --pods 200000 --nodes 1000 --workers 4 --seed 7
//! cargo run --release --example soak -- --pods 200000 --mode full
//! ```
//!
//! Flags (`--flag value` or `--flag=value`): `--pods` attempts to run (default
//! 100000), `--nodes` (5000), `--steady` pods alive at the steady size (5 per node),
//! `--workers` binding threads (2), `--check-every` attempts between checks (10000),
//! `--seed` (1), `--mode` (`default`, `dra`, `gangs` or `full`), `--rss-limit-mb`
//! fail when the resident set grows by more than this once settled, `--heap-limit-mb`
//! likewise for the live heap's floor (default: report only). The live heap is
//! counted by a counting global allocator (`stats_alloc`).

use std::alloc::System;
use std::process::ExitCode;

use schedkit::testing::soak::{self, SoakConfig};
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

fn live_heap() -> u64 {
    let s = GLOBAL.stats();
    s.bytes_allocated.saturating_sub(s.bytes_deallocated) as u64
}

fn parse(args: &[String]) -> Result<SoakConfig, String> {
    let mut c = SoakConfig { live_heap: Some(live_heap), ..SoakConfig::default() };
    let mut steady = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) => (f, Some(v.to_owned())),
            None => (arg.as_str(), None),
        };
        let mut value = || inline.clone().or_else(|| it.next().cloned()).ok_or_else(|| format!("{flag} needs a value"));
        let num = |v: String| v.replace('_', "").parse::<u64>().map_err(|e| format!("{flag} {v:?}: {e}"));
        match flag {
            "--pods" | "--attempts" => c.attempts = num(value()?)?,
            "--nodes" => c.nodes = num(value()?)? as usize,
            "--steady" => steady = Some(num(value()?)? as usize),
            "--workers" => c.workers = num(value()?)? as usize,
            "--check-every" => c.check_every = num(value()?)?,
            "--seed" => c.seed = num(value()?)?,
            "--mode" => c.mode = value()?.parse().map_err(|e| format!("{e}"))?,
            "--rss-limit-mb" => c.rss_growth_limit = Some(num(value()?)? * 1_000_000),
            "--heap-limit-mb" => c.heap_growth_limit = Some(num(value()?)? * 1_000_000),
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown flag {other:?}")),
        }
    }
    c.steady_pods = steady.unwrap_or(c.nodes * 5);
    Ok(c)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let config = match parse(&args) {
        Ok(c) => c,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("soak: {e}");
            }
            eprintln!(
                "usage: soak [--pods N] [--nodes N] [--steady N] [--workers N] [--check-every N] [--seed N] \
                 [--mode default|dra|gangs|full] [--rss-limit-mb N] [--heap-limit-mb N]"
            );
            return ExitCode::from(2);
        }
    };
    match soak::run(&config) {
        Ok(summary) => {
            println!("{summary}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("soak failed: {e}");
            ExitCode::FAILURE
        }
    }
}
