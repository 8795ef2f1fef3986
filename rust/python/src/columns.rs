//! Columns into Python: each becomes a numpy array that owns the Rust buffer (no copy).

use numpy::{Element, IntoPyArray};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// `d[name] = numpy array of the values, T::default() where None`, and `d[name + "_valid"]` a
/// numpy array of bools that says which were not None: millions of optional values cost two
/// arrays, not a Python object each.
pub fn opt_col<'py, T: Element + Default, I: IntoIterator<Item = Option<T>>>(
    d: &Bound<'py, PyDict>,
    name: &str,
    values: I,
) -> PyResult<()> {
    let (v, ok): (Vec<T>, Vec<bool>) = values
        .into_iter()
        .map(|x| {
            let ok = x.is_some();
            (x.unwrap_or_default(), ok)
        })
        .unzip();
    d.set_item(name, v.into_pyarray(d.py()))?;
    d.set_item(format!("{name}_valid"), ok.into_pyarray(d.py()))
}

/// `d[name] = numpy array of the values`.
pub fn col<'py, T: Element, I: IntoIterator<Item = T>>(
    d: &Bound<'py, PyDict>,
    name: &str,
    values: I,
) -> PyResult<()> {
    d.set_item(
        name,
        values.into_iter().collect::<Vec<T>>().into_pyarray(d.py()),
    )
}

/// IP address columns as indexes into one label per distinct address: a frame of millions of
/// flows between a few hosts gets two u32 arrays and a handful of strings, not a Python string
/// per cell (which cost seconds, and delayed Ctrl-C, at tens of millions of rows).
#[derive(Default)]
pub struct Addresses {
    index: std::collections::HashMap<Option<std::net::IpAddr>, u32>,
    labels: Vec<Option<String>>,
}

impl Addresses {
    /// `d[name]` = the index of each row's address among the labels (a missing address has a
    /// null label of its own).
    pub fn col<'py>(
        &mut self,
        d: &Bound<'py, PyDict>,
        name: &str,
        values: impl IntoIterator<Item = Option<std::net::IpAddr>>,
    ) -> PyResult<()> {
        let idx: Vec<u32> = values
            .into_iter()
            .map(|a| {
                *self.index.entry(a).or_insert_with(|| {
                    self.labels.push(a.map(|a| a.to_string()));
                    (self.labels.len() - 1) as u32
                })
            })
            .collect();
        d.set_item(name, idx.into_pyarray(d.py()))
    }

    /// `d[name]` = the labels, a list of str (None for a missing address).
    pub fn labels<'py>(self, d: &Bound<'py, PyDict>, name: &str) -> PyResult<()> {
        d.set_item(name, self.labels)
    }
}
