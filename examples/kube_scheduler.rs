//! A secondary scheduler for a real cluster: kube-scheduler's default plugins (merged
//! with a KubeSchedulerConfiguration file when given) on schedkit, fed and bound
//! through the API server by `schedkit::kube::run`. Pods that set
//! `spec.schedulerName` to the profile's name are scheduled by it. Ctrl-C (or
//! SIGTERM in a pod) stops it after the attempt in progress.
//!
//! ```text
//! cargo run --features kube-rustls,yaml --example kube_scheduler -- \
//!     --kubeconfig ~/.kube/config --config scheduler-config.yaml --scheduler-name schedkit
//! ```
//!
//! Without `--kubeconfig` it uses the in-cluster service account, else `$KUBECONFIG`
//! or `~/.kube/config`. `--scheduler-name` names the profile of a file with one profile
//! (or of the default profile without `--config`). Leader election follows the file's
//! `leaderElection` (on by default, lease `kube-system/kube-scheduler`; the deploy
//! manifests in examples/deploy/ name it `schedkit`). Deploying: README, "Running in
//! a cluster".

use schedkit::config::KubeSchedulerConfiguration;
use schedkit::framework::Handle;
use schedkit::kube::{LeaderElection, RunOptions, Shutdown};
use schedkit::plugins::inter_pod_affinity::NamespaceLabels;

#[derive(Debug, Default)]
struct Args {
    kubeconfig: Option<String>,
    config: Option<String>,
    scheduler_name: Option<String>,
}

fn parse_args(argv: impl IntoIterator<Item = String>) -> Result<Args, String> {
    let mut parsed = Args::default();
    let mut it = argv.into_iter();
    while let Some(a) = it.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) => (f.to_owned(), Some(v.to_owned())),
            None => (a.clone(), None),
        };
        let slot = match flag.as_str() {
            "--kubeconfig" => &mut parsed.kubeconfig,
            "--config" => &mut parsed.config,
            "--scheduler-name" => &mut parsed.scheduler_name,
            _ => return Err(format!("unknown argument {a:?} (expected --kubeconfig, --config, --scheduler-name)")),
        };
        let value = match inline {
            Some(v) => v,
            None => it.next().ok_or_else(|| format!("{flag} needs a value"))?,
        };
        *slot = Some(value);
    }
    Ok(parsed)
}

/// Log lines to stderr at info level and above (`RUST_LOG=debug` for more).
struct StderrLogger;

static LOGGER: StderrLogger = StderrLogger;

impl log::Log for StderrLogger {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.level() <= log::max_level()
    }
    fn log(&self, r: &log::Record<'_>) {
        if self.enabled(r.metadata()) {
            eprintln!("{} {}: {}", r.level(), r.target(), r.args());
        }
    }
    fn flush(&self) {}
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args(std::env::args().skip(1))?;
    let level = match std::env::var("RUST_LOG").as_deref() {
        Ok("debug") => log::LevelFilter::Debug,
        Ok("warn") => log::LevelFilter::Warn,
        _ => log::LevelFilter::Info,
    };
    log::set_logger(&LOGGER).map(|()| log::set_max_level(level)).map_err(|e| e.to_string())?;

    // An invalid file fails here, with the field path.
    let mut file = match &args.config {
        Some(path) => KubeSchedulerConfiguration::from_file(path)?,
        None => KubeSchedulerConfiguration::from_json(
            r#"{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}"#,
        )?,
    };
    if let Some(name) = &args.scheduler_name {
        match file.profiles.len() {
            0 => file.profiles.push(serde_json::from_value(serde_json::json!({"schedulerName": name}))?),
            1 => file.profiles[0].scheduler_name = Some(name.clone()),
            n => return Err(format!("--scheduler-name: the file has {n} profiles; name them in the file").into()),
        }
    }

    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(async move {
        let client = match &args.kubeconfig {
            Some(path) => {
                let kubeconfig = kube::config::Kubeconfig::read_from(path)?;
                let config =
                    kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default())
                        .await?;
                kube::Client::try_from(config)?
            }
            None => kube::Client::try_default().await?,
        };
        let namespaces = NamespaceLabels::default();
        let registry = schedkit::kube::registry(&client, &namespaces)?;
        let handle = Handle::default();
        let built = file.build(&registry, &handle)?;
        let identity =
            format!("{}_{}", std::env::var("HOSTNAME").unwrap_or_else(|_| "schedkit".into()), std::process::id());
        let leader_election = LeaderElection::from_config(&built.defaulted.leader_election, &identity)?;
        let names: Vec<String> = built.profiles.iter().map(|p| p.name().to_owned()).collect();
        let scheduler = built.scheduler_builder(handle).build();
        let shutdown = Shutdown::new();
        let on_signal = shutdown.clone();
        tokio::spawn(async move {
            wait_for_signal().await;
            log::info!("stopping");
            on_signal.trigger();
        });
        log::info!("scheduling pods of {names:?}");
        let opts = RunOptions { namespaces: Some(namespaces), leader_election, shutdown, ..RunOptions::default() };
        let stats = schedkit::kube::run(client, scheduler, opts).await?;
        log::info!("stopped: {stats:?}");
        Ok::<(), Box<dyn std::error::Error>>(())
    })
}

/// Ctrl-C, or SIGTERM (what a pod gets when it is stopped).
async fn wait_for_signal() {
    #[cfg(unix)]
    {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[cfg(test)]
mod tests {
    use super::parse_args;

    fn args(a: &[&str]) -> Result<super::Args, String> {
        parse_args(a.iter().map(|s| (*s).to_owned()))
    }

    #[test]
    fn flags_with_spaces_or_equals() {
        let a = args(&["--kubeconfig", "/k", "--config=/c.yaml", "--scheduler-name", "schedkit"]).unwrap();
        assert_eq!(a.kubeconfig.as_deref(), Some("/k"));
        assert_eq!(a.config.as_deref(), Some("/c.yaml"));
        assert_eq!(a.scheduler_name.as_deref(), Some("schedkit"));
        assert_eq!(args(&["--config"]).unwrap_err(), "--config needs a value");
        assert!(args(&["--port", "1"]).unwrap_err().starts_with("unknown argument"));
    }
}
