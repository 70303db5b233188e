//! Deserializers for list-valued keys: a TOML array, or — from an environment variable, where
//! only strings exist — a comma-separated string. And access-list entries: numeric ids or `"*"`.

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::marker::PhantomData;
use std::str::FromStr;

/// A list given as an array or as `"a,b,c"`.
pub fn list<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + FromStr,
    T::Err: fmt::Display,
{
    struct ListVisitor<T>(PhantomData<T>);

    impl<'de, T> Visitor<'de> for ListVisitor<T>
    where
        T: Deserialize<'de> + FromStr,
        T::Err: fmt::Display,
    {
        type Value = Vec<T>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a list, or a comma-separated string")
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(item) = seq.next_element()? {
                out.push(item);
            }
            Ok(out)
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            v.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| s.parse::<T>().map_err(E::custom))
                .collect()
        }

        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            self.visit_str(&v.to_string())
        }

        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            self.visit_str(&v.to_string())
        }
    }

    deserializer.deserialize_any(ListVisitor(PhantomData))
}

/// One entry of an access list: a numeric platform id, or `"*"` (anyone).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AccessId {
    Anyone,
    Id(i64),
}

impl fmt::Display for AccessId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AccessId::Anyone => f.write_str("*"),
            AccessId::Id(id) => write!(f, "{id}"),
        }
    }
}

impl FromStr for AccessId {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "*" {
            return Ok(AccessId::Anyone);
        }
        s.parse().map(AccessId::Id).map_err(|_| {
            format!("`{s}` is not a numeric id or \"*\" (usernames are not accepted: they can change hands)")
        })
    }
}

impl<'de> Deserialize<'de> for AccessId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct IdVisitor;
        impl Visitor<'_> for IdVisitor {
            type Value = AccessId;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a numeric id or \"*\"")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<AccessId, E> {
                Ok(AccessId::Id(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<AccessId, E> {
                i64::try_from(v)
                    .map(AccessId::Id)
                    .map_err(|_| E::custom(format!("id {v} is out of range")))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<AccessId, E> {
                v.parse().map_err(E::custom)
            }
        }
        deserializer.deserialize_any(IdVisitor)
    }
}

impl Serialize for AccessId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            AccessId::Anyone => serializer.serialize_str("*"),
            AccessId::Id(id) => serializer.serialize_i64(*id),
        }
    }
}
