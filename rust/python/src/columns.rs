//! Columns into Python: each becomes a numpy array that owns the Rust buffer (no copy).

use numpy::{Element, IntoPyArray};
use pyo3::prelude::*;
use pyo3::types::PyDict;

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
