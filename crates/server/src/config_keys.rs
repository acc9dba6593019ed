//! The keys a configuration file may hold: the fields of the configuration struct, read from
//! its own `Deserialize` (serde hands every field name to the deserializer), so the list cannot
//! drift from the struct. A key of the file that is not one of them is an error naming it, as a
//! typo would otherwise be silently ignored.

use serde::de::{self, Deserializer, Visitor};

/// A deserializer that only records the field names of the struct asked of it.
struct FieldNames<'a>(&'a mut Vec<&'static str>);

impl<'de> Deserializer<'de> for FieldNames<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("only the field names are read"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.extend_from_slice(fields);
        Err(de::Error::custom("only the field names are read"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// The field names of the struct `T`.
pub fn field_names<'de, T: serde::Deserialize<'de>>() -> Vec<&'static str> {
    let mut names = Vec::new();
    // Fails by design once the names are recorded.
    let _ = T::deserialize(FieldNames(&mut names));
    names
}

/// `Err` naming the first of `keys` that is not one of `known`.
pub fn check<'a>(
    file: &str,
    keys: impl IntoIterator<Item = &'a str>,
    known: &[&str],
) -> Result<(), String> {
    for key in keys {
        if !known.contains(&key) {
            let near = known
                .iter()
                .find(|k| k.contains(key) || key.contains(*k))
                .map(|k| format!(" (did you mean `{k}`?)"))
                .unwrap_or_default();
            return Err(format!(
                "{file}: unknown key `{key}`{near}; the keys are listed in the README's Operating section"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config_settings::Settings;

    fn known() -> Vec<&'static str> {
        field_names::<Settings>()
    }

    #[test]
    fn the_known_keys_are_the_fields_of_the_settings() {
        let known = known();
        for key in [
            "listen",
            "database_url",
            "data_dir",
            "master_key_file",
            "code_modules",
        ] {
            assert!(known.contains(&key), "{key} in {known:?}");
        }
        assert!(known.len() >= 25, "{known:?}");
    }

    #[test]
    fn an_unknown_key_is_named_with_a_near_one() {
        let known = known();
        assert!(check("f.toml", ["listen", "code_workers"], &known).is_ok());
        let error = check("f.toml", ["listen", "code_worker_count"], &known).unwrap_err();
        assert!(error.contains("`code_worker_count`"), "{error}");
        let error = check("f.toml", ["lissen"], &known).unwrap_err();
        assert!(error.contains("unknown key `lissen`"), "{error}");
    }
}
