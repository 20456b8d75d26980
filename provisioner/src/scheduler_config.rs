//! `--kube-scheduler-config`: the cluster's KubeSchedulerConfiguration, read for the one thing
//! planning must mirror, the `PodTopologySpread` plugin's default constraints
//! ([`adze_scheduling::default_spread`]). Everything else in the file is kube-scheduler's
//! business and is not read.
//!
//! As kube-scheduler reads it: the profile of `default-scheduler` (a profile with no
//! `schedulerName` is that one), its `pluginConfig` entry named `PodTopologySpread`;
//! `defaultingType` `System` (the default since 1.20, also when the file has no such entry)
//! gives hostname maxSkew 3 and zone maxSkew 5, both `ScheduleAnyway`; `List` gives
//! `defaultConstraints`, and an empty list turns defaults off.

use adze_scheduling::default_spread::{DefaultConstraint, DefaultSpread};
use serde_json::Value;

/// KubeSchedulerConfiguration API versions kube-scheduler 1.19 to current read.
const API_VERSIONS: [&str; 4] = [
    "kubescheduler.config.k8s.io/v1",
    "kubescheduler.config.k8s.io/v1beta3",
    "kubescheduler.config.k8s.io/v1beta2",
    "kubescheduler.config.k8s.io/v1beta1",
];
const DEFAULT_SCHEDULER: &str = "default-scheduler";
/// Largest file read: a scheduler configuration is a few KiB.
const MAX_BYTES: usize = 1 << 20;

/// Reads the file at `path` (the value of `--kube-scheduler-config`).
pub fn read(path: &str) -> Result<DefaultSpread, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{path}: {e}"))?;
    if meta.len() > MAX_BYTES as u64 {
        return Err(format!(
            "{path}: {} bytes is more than a scheduler configuration ({MAX_BYTES} at most)",
            meta.len()
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    parse(&text).map_err(|e| format!("{path}: {e}"))
}

/// Parses a KubeSchedulerConfiguration document; errors name the field by its path.
pub fn parse(text: &str) -> Result<DefaultSpread, String> {
    let mut docs = crate::simulate::yaml::documents(text).map_err(|e| e.to_string())?;
    let doc = match docs.next() {
        Some((_, Ok(v))) => v,
        Some((_, Err(e))) => return Err(e.to_string()),
        None => return Err("empty: expected a KubeSchedulerConfiguration".into()),
    };
    if docs.next().is_some() {
        return Err("more than one document: expected one KubeSchedulerConfiguration".into());
    }
    from_value(&doc)
}

fn from_value(doc: &Value) -> Result<DefaultSpread, String> {
    let api_version = doc.get("apiVersion").and_then(Value::as_str);
    if !api_version.is_some_and(|v| API_VERSIONS.contains(&v)) {
        return Err(format!(
            "apiVersion: expected one of {}, got {api_version:?}",
            API_VERSIONS.join(", ")
        ));
    }
    let kind = doc.get("kind").and_then(Value::as_str);
    if kind != Some("KubeSchedulerConfiguration") {
        return Err(format!(
            "kind: expected KubeSchedulerConfiguration, got {kind:?}"
        ));
    }
    let profiles = match doc.get("profiles") {
        None | Some(Value::Null) => return Ok(DefaultSpread::system()),
        Some(Value::Array(p)) => p,
        Some(_) => return Err("profiles: expected a list".into()),
    };
    let profile = profiles.iter().enumerate().find(|(_, p)| {
        p.get("schedulerName")
            .and_then(Value::as_str)
            .unwrap_or(DEFAULT_SCHEDULER)
            == DEFAULT_SCHEDULER
    });
    let Some((i, profile)) = profile else {
        // Pods of the default scheduler are the ones Adze plans for.
        return Err(format!(
            "profiles: none is {DEFAULT_SCHEDULER:?}, the scheduler Adze plans for"
        ));
    };
    let configs = match profile.get("pluginConfig") {
        None | Some(Value::Null) => return Ok(DefaultSpread::system()),
        Some(Value::Array(c)) => c,
        Some(_) => return Err(format!("profiles[{i}].pluginConfig: expected a list")),
    };
    let Some((j, entry)) = configs
        .iter()
        .enumerate()
        .find(|(_, c)| c.get("name").and_then(Value::as_str) == Some("PodTopologySpread"))
    else {
        return Ok(DefaultSpread::system());
    };
    let path = format!("profiles[{i}].pluginConfig[{j}].args");
    let args = match entry.get("args") {
        None | Some(Value::Null) => return Ok(DefaultSpread::system()),
        Some(a @ Value::Object(_)) => a,
        Some(_) => return Err(format!("{path}: expected a mapping")),
    };
    plugin_args(&path, args)
}

fn plugin_args(path: &str, args: &Value) -> Result<DefaultSpread, String> {
    for key in args.as_object().into_iter().flatten().map(|(k, _)| k) {
        if !matches!(
            key.as_str(),
            "defaultingType" | "defaultConstraints" | "apiVersion" | "kind"
        ) {
            return Err(format!(
                "{path}.{key}: not a PodTopologySpread argument Adze knows"
            ));
        }
    }
    let constraints = match args.get("defaultConstraints") {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(c)) => c.as_slice(),
        Some(_) => return Err(format!("{path}.defaultConstraints: expected a list")),
    };
    match args.get("defaultingType").and_then(Value::as_str) {
        None | Some("System") if args.get("defaultingType").is_none_or(Value::is_string) => {
            if !constraints.is_empty() {
                // kube-scheduler refuses this configuration.
                return Err(format!(
                    "{path}.defaultConstraints: must be empty with defaultingType System (set defaultingType: List)"
                ));
            }
            Ok(DefaultSpread::system())
        }
        Some("List") => {
            let list_path = format!("{path}.defaultConstraints");
            let parsed = constraints
                .iter()
                .enumerate()
                .map(|(k, c)| constraint(&format!("{list_path}[{k}]"), c))
                .collect::<Result<Vec<_>, _>>()?;
            DefaultSpread::list(&list_path, parsed).map_err(|e| e.to_string())
        }
        _ => Err(format!(
            "{path}.defaultingType: expected System or List, got {}",
            args["defaultingType"]
        )),
    }
}

fn constraint(path: &str, c: &Value) -> Result<DefaultConstraint, String> {
    let Some(fields) = c.as_object() else {
        return Err(format!("{path}: expected a mapping"));
    };
    for key in fields.keys() {
        match key.as_str() {
            "maxSkew" | "topologyKey" | "whenUnsatisfiable" | "minDomains" => {}
            "labelSelector" | "matchLabelKeys" => {
                return Err(format!(
                    "{path}.{key}: not allowed on default constraints (the selector is derived for each pod from the Services and the ReplicaSet, StatefulSet or ReplicationController selecting it)"
                ));
            }
            _ => {
                return Err(format!(
                    "{path}.{key}: not supported by Adze on default constraints"
                ));
            }
        }
    }
    let count = |field: &str, v: &Value| {
        v.as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| format!("{path}.{field}: expected a whole number, got {v}"))
    };
    let max_skew = match c.get("maxSkew") {
        Some(v) => count("maxSkew", v)?,
        None => return Err(format!("{path}.maxSkew: required")),
    };
    let topology_key = match c.get("topologyKey") {
        Some(Value::String(k)) => k.clone(),
        Some(v) => return Err(format!("{path}.topologyKey: expected a label key, got {v}")),
        None => return Err(format!("{path}.topologyKey: required")),
    };
    if !topology_key.is_empty() && !adze_api::patterns::is_qualified_name(&topology_key) {
        return Err(format!(
            "{path}.topologyKey: {topology_key:?} is not a label key"
        ));
    }
    let hard = match c.get("whenUnsatisfiable").and_then(Value::as_str) {
        Some("DoNotSchedule") => true,
        Some("ScheduleAnyway") => false,
        _ => {
            return Err(format!(
                "{path}.whenUnsatisfiable: expected DoNotSchedule or ScheduleAnyway"
            ));
        }
    };
    let min_domains = match c.get("minDomains") {
        None | Some(Value::Null) => None,
        Some(v) => Some(count("minDomains", v)?),
    };
    Ok(DefaultConstraint {
        max_skew,
        topology_key,
        hard,
        min_domains,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use adze_scheduling::labels;

    const HEAD: &str =
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";

    fn args(body: &str) -> String {
        format!(
            "{HEAD}profiles:\n- schedulerName: default-scheduler\n  pluginConfig:\n  - name: PodTopologySpread\n    args:\n{body}"
        )
    }

    #[test]
    fn no_plugin_arguments_mean_the_system_defaults() {
        assert_eq!(parse(HEAD).unwrap(), DefaultSpread::system());
        let other_plugin = format!(
            "{HEAD}profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {{}}\n"
        );
        assert_eq!(parse(&other_plugin).unwrap(), DefaultSpread::system());
        let v1beta1 = "apiVersion: kubescheduler.config.k8s.io/v1beta1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: default-scheduler\n";
        assert_eq!(parse(v1beta1).unwrap(), DefaultSpread::system());
        assert_eq!(
            parse(&args("      defaultingType: System\n")).unwrap(),
            DefaultSpread::system()
        );
    }

    #[test]
    fn a_list_is_read_and_an_empty_list_turns_defaults_off() {
        let off = parse(&args(
            "      defaultingType: List\n      defaultConstraints: []\n",
        ))
        .unwrap();
        assert!(off.is_empty());
        let zone = parse(&args(
            "      defaultingType: List\n      defaultConstraints:\n      - maxSkew: 1\n        topologyKey: topology.kubernetes.io/zone\n        whenUnsatisfiable: DoNotSchedule\n        minDomains: 3\n",
        ))
        .unwrap();
        assert_eq!(
            zone.constraints,
            vec![DefaultConstraint {
                max_skew: 1,
                topology_key: labels::ZONE.into(),
                hard: true,
                min_domains: Some(3),
            }]
        );
    }

    #[test]
    fn mistakes_are_refused_naming_the_field() {
        let base = "profiles[0].pluginConfig[0].args";
        for (body, field) in [
            ("      defaultingType: Sometimes\n", "args.defaultingType"),
            (
                "      defaultConstraints:\n      - maxSkew: 1\n        topologyKey: a\n        whenUnsatisfiable: DoNotSchedule\n",
                "args.defaultConstraints",
            ),
            (
                "      defaultingType: List\n      defaultConstraints:\n      - maxSkew: 1\n        topologyKey: a\n        whenUnsatisfiable: DoNotSchedule\n        labelSelector: {}\n",
                "defaultConstraints[0].labelSelector",
            ),
            (
                "      defaultingType: List\n      defaultConstraints:\n      - maxSkew: 0\n        topologyKey: a\n        whenUnsatisfiable: DoNotSchedule\n",
                "defaultConstraints[0].maxSkew",
            ),
            (
                "      defaultingType: List\n      defaultConstraints:\n      - maxSkew: -2\n        topologyKey: a\n        whenUnsatisfiable: DoNotSchedule\n",
                "defaultConstraints[0].maxSkew",
            ),
            (
                "      defaultingType: List\n      defaultConstraints:\n      - maxSkew: 1\n        topologyKey: a\n        whenUnsatisfiable: Maybe\n",
                "defaultConstraints[0].whenUnsatisfiable",
            ),
            (
                "      defaultingType: List\n      defaultConstraints:\n      - maxSkew: 1\n        topologyKey: 'not a key'\n        whenUnsatisfiable: DoNotSchedule\n",
                "defaultConstraints[0].topologyKey",
            ),
            (
                "      defaultingType: List\n      defaultConstraints:\n      - maxSkew: 1\n        topologyKey: a\n        whenUnsatisfiable: DoNotSchedule\n        nodeTaintsPolicy: Honor\n",
                "defaultConstraints[0].nodeTaintsPolicy",
            ),
            ("      defaultsPlease: true\n", "args.defaultsPlease"),
        ] {
            let e = parse(&args(body)).unwrap_err();
            assert!(e.starts_with(base) || e.contains(field), "{body}: {e}");
            assert!(e.contains(field), "{body}: {e}");
        }
        assert!(
            parse("apiVersion: v1\nkind: ConfigMap\n")
                .unwrap_err()
                .starts_with("apiVersion")
        );
        let other = format!("{HEAD}profiles:\n- schedulerName: batch\n");
        assert!(parse(&other).unwrap_err().starts_with("profiles"));
        assert!(parse("").is_err());
        assert!(read("/nonexistent/adze-scheduler.yaml").is_err());
    }
}
