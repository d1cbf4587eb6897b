//! Strict decoding of a configuration file: unknown fields and wrong types are errors
//! naming the field path, and the line and column where the decoder knows them.

use std::path::Path;

use super::{API_VERSION, KIND, KubeSchedulerConfiguration};

/// A configuration file that could not be loaded, saying where.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigFileError {
    /// The text does not decode: a syntax error, a wrong type or an unknown field.
    #[error("{path}: {message}{}", location(*line, *column))]
    Decode {
        /// Field path (`profiles[0].plugins`); `.` for the top level.
        path: String,
        /// 1-based line, when the decoder reports one.
        line: Option<usize>,
        /// 1-based column, when the decoder reports one.
        column: Option<usize>,
        /// The decoder's message.
        message: String,
    },
    /// `apiVersion` or `kind` is missing or not the one schedkit reads.
    #[error("{field}: {}", type_message(got, expected))]
    WrongType {
        /// `apiVersion` or `kind`.
        field: &'static str,
        /// What the file says (empty: missing).
        got: String,
        /// What schedkit reads.
        expected: &'static str,
    },
    /// The file could not be read.
    #[error("reading {path}: {message}")]
    Io {
        /// The path given.
        path: String,
        /// The OS error.
        message: String,
    },
}

fn location(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(" (line {l}, column {c})"),
        (Some(l), None) => format!(" (line {l})"),
        _ => String::new(),
    }
}

fn type_message(got: &str, expected: &str) -> String {
    if got.is_empty() {
        format!("Required value: must be {expected:?}")
    } else {
        format!("Unsupported value: {got:?}: supported values: {expected:?}")
    }
}

/// The decoder's message without the position it appends (reported apart).
fn bare_message(text: String) -> String {
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}

fn path_string(path: &serde_path_to_error::Path) -> String {
    let s = path.to_string();
    if s.is_empty() { ".".to_owned() } else { s }
}

impl KubeSchedulerConfiguration {
    /// Decodes a JSON file strictly and checks `apiVersion` and `kind`. Not yet
    /// defaulted: call [`KubeSchedulerConfiguration::defaulted`] or
    /// [`KubeSchedulerConfiguration::build`].
    pub fn from_json(text: &str) -> Result<Self, ConfigFileError> {
        let mut de = serde_json::Deserializer::from_str(text);
        let cfg: Self = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let path = path_string(e.path());
            let inner = e.into_inner();
            ConfigFileError::Decode {
                path,
                line: Some(inner.line()).filter(|&l| l > 0),
                column: Some(inner.column()).filter(|&c| c > 0),
                message: bare_message(inner.to_string()),
            }
        })?;
        de.end().map_err(|e| ConfigFileError::Decode {
            path: ".".to_owned(),
            line: Some(e.line()),
            column: Some(e.column()),
            message: bare_message(e.to_string()),
        })?;
        cfg.check_type()?;
        Ok(cfg)
    }

    /// Decodes a YAML file (one document) strictly and checks `apiVersion` and `kind`;
    /// errors carry the line and column. Needs the `yaml` feature.
    #[cfg(feature = "yaml")]
    pub fn from_yaml(text: &str) -> Result<Self, ConfigFileError> {
        let de = serde_norway::Deserializer::from_str(text);
        let cfg: Self = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = path_string(e.path());
            let inner = e.into_inner();
            let loc = inner.location();
            ConfigFileError::Decode {
                path,
                line: loc.as_ref().map(serde_norway::Location::line),
                column: loc.as_ref().map(serde_norway::Location::column),
                message: bare_message(inner.to_string()),
            }
        })?;
        cfg.check_type()?;
        Ok(cfg)
    }

    /// Reads and decodes a file: YAML (which includes JSON) with the `yaml` feature,
    /// JSON without it.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, ConfigFileError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigFileError::Io { path: path.display().to_string(), message: e.to_string() })?;
        #[cfg(feature = "yaml")]
        {
            Self::from_yaml(&text)
        }
        #[cfg(not(feature = "yaml"))]
        {
            Self::from_json(&text)
        }
    }

    fn check_type(&self) -> Result<(), ConfigFileError> {
        if self.api_version != API_VERSION {
            return Err(ConfigFileError::WrongType {
                field: "apiVersion",
                got: self.api_version.clone(),
                expected: API_VERSION,
            });
        }
        if self.kind != KIND {
            return Err(ConfigFileError::WrongType { field: "kind", got: self.kind.clone(), expected: KIND });
        }
        // Upstream decodes each built-in plugin's args strictly into its `<Name>Args`.
        for (i, p) in self.profiles.iter().enumerate() {
            for (j, a) in p.plugin_config.iter().enumerate() {
                let path = format!("profiles[{i}].pluginConfig[{j}].args");
                if let Some(kind) = a.args.get("kind").and_then(serde_json::Value::as_str)
                    && let Some(want) = super::plugin_args_kind(&a.name)
                    && kind != want
                {
                    return Err(ConfigFileError::Decode {
                        path: format!("{path}.kind"),
                        line: None,
                        column: None,
                        message: format!("args of plugin {:?} must be of kind {want:?}, got {kind:?}", a.name),
                    });
                }
                if let Some(field) = super::args::unknown_arg_fields(&a.name, &a.args).into_iter().next() {
                    return Err(ConfigFileError::Decode {
                        path: format!("{path}.{field}"),
                        line: None,
                        column: None,
                        message: format!("unknown field in the args of plugin {:?}", a.name),
                    });
                }
            }
        }
        Ok(())
    }
}
