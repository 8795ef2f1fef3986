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
