//! Columns into polars through the Arrow C data interface (the PyCapsule protocol,
//! `__arrow_c_array__`): one struct array whose children are the columns. polars adopts the
//! buffers as they are (no copy, no pyarrow): validity bitmaps built in Rust become its null
//! masks, and the address strings arrive as a `Utf8View` column, which is polars' own `String`
//! layout. Each buffer is a Rust `Vec` freed by the array's `release` callback whenever polars
//! drops the last reference.
//!
//! The structs and the release protocol follow the specification
//! (<https://arrow.apache.org/docs/format/CDataInterface.html>): the producer (this module)
//! allocates every struct and frees them in `release`; the consumer moves a struct out and marks
//! the original released.

use std::any::Any;
use std::ffi::{c_char, c_void, CString};

use burstcore::table::{AddressColumn, Nullable, Validity};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

/// `struct ArrowSchema` of the C data interface.
#[repr(C)]
pub struct ArrowSchema {
    format: *const c_char,
    name: *const c_char,
    metadata: *const c_char,
    flags: i64,
    n_children: i64,
    children: *mut *mut ArrowSchema,
    dictionary: *mut ArrowSchema,
    release: Option<unsafe extern "C" fn(*mut ArrowSchema)>,
    private_data: *mut c_void,
}

/// `struct ArrowArray` of the C data interface.
#[repr(C)]
pub struct ArrowArray {
    length: i64,
    null_count: i64,
    offset: i64,
    n_buffers: i64,
    n_children: i64,
    buffers: *mut *const c_void,
    children: *mut *mut ArrowArray,
    dictionary: *mut ArrowArray,
    release: Option<unsafe extern "C" fn(*mut ArrowArray)>,
    private_data: *mut c_void,
}

const ARROW_FLAG_NULLABLE: i64 = 2;

/// A column ready to cross: its Arrow format string, the buffer pointers in the order the format
/// prescribes, and the owner of the memory they point into.
pub struct Column {
    name: CString,
    format: CString,
    len: usize,
    null_count: usize,
    buffers: Vec<*const c_void>,
    owner: Box<dyn Any>,
}

fn cstring(s: &str) -> PyResult<CString> {
    CString::new(s).map_err(|_| PyValueError::new_err(format!("NUL in column name {s:?}")))
}

/// The validity buffer pointer: null when no row is null (the specification allows it, and it
/// spares the consumer a bitmap).
fn validity_ptr(v: &Validity) -> *const c_void {
    if v.nulls == 0 {
        std::ptr::null()
    } else {
        v.bits.as_ptr().cast()
    }
}

impl Column {
    /// A column without nulls; `format` is the Arrow format of `T` ("I" for u32, ...).
    pub fn plain<T: 'static>(name: &str, format: &str, values: Vec<T>) -> PyResult<Self> {
        Ok(Column {
            name: cstring(name)?,
            format: cstring(format)?,
            len: values.len(),
            null_count: 0,
            buffers: vec![std::ptr::null(), values.as_ptr().cast()],
            owner: Box::new(values),
        })
    }

    /// A column with a validity bitmap.
    pub fn nullable<T: 'static>(name: &str, format: &str, col: Nullable<T>) -> PyResult<Self> {
        if col.valid.len != col.values.len() {
            return Err(PyValueError::new_err(format!(
                "column {name}: {} values but {} validity bits",
                col.values.len(),
                col.valid.len
            )));
        }
        Ok(Column {
            name: cstring(name)?,
            format: cstring(format)?,
            len: col.values.len(),
            null_count: col.valid.nulls,
            buffers: vec![validity_ptr(&col.valid), col.values.as_ptr().cast()],
            owner: Box::new(col),
        })
    }

    /// Addresses as strings (`Utf8View`), their views and text as the table built them.
    pub fn addresses(name: &str, col: AddressColumn) -> PyResult<Self> {
        if col.valid.len != col.views.len() {
            return Err(PyValueError::new_err(format!(
                "column {name}: {} views but {} validity bits",
                col.views.len(),
                col.valid.len
            )));
        }
        let mut buffers = vec![validity_ptr(&col.valid), col.views.as_ptr().cast()];
        buffers.extend(col.text.iter().map(|t| t.as_ptr().cast::<c_void>()));
        let sizes: Vec<i64> = col.text.iter().map(|t| t.len() as i64).collect();
        buffers.push(sizes.as_ptr().cast());
        Ok(Column {
            name: cstring(name)?,
            format: cstring("vu")?,
            len: col.views.len(),
            null_count: col.valid.nulls,
            buffers,
            owner: Box::new((col, sizes)),
        })
    }
}

struct ArrayPrivate {
    buffers: Vec<*const c_void>,
    children: Vec<*mut ArrowArray>,
    _owner: Box<dyn Any>,
}

struct SchemaPrivate {
    _format: CString,
    _name: CString,
    children: Vec<*mut ArrowSchema>,
}

unsafe extern "C" fn release_array(array: *mut ArrowArray) {
    // SAFETY: the consumer passes an array this module made (or a child of one), whose
    // private_data is the ArrayPrivate it was given; release runs once (it then clears itself).
    unsafe {
        let Some(a) = array.as_mut() else { return };
        if a.release.is_none() || a.private_data.is_null() {
            return;
        }
        let private = Box::from_raw(a.private_data.cast::<ArrayPrivate>());
        for &child in &private.children {
            if let Some(release) = (*child).release {
                release(child);
            }
            drop(Box::from_raw(child));
        }
        drop(private);
        a.private_data = std::ptr::null_mut();
        a.release = None;
    }
}

unsafe extern "C" fn release_schema(schema: *mut ArrowSchema) {
    // SAFETY: as for release_array.
    unsafe {
        let Some(s) = schema.as_mut() else { return };
        if s.release.is_none() || s.private_data.is_null() {
            return;
        }
        let private = Box::from_raw(s.private_data.cast::<SchemaPrivate>());
        for &child in &private.children {
            if let Some(release) = (*child).release {
                release(child);
            }
            drop(Box::from_raw(child));
        }
        drop(private);
        s.private_data = std::ptr::null_mut();
        s.release = None;
    }
}

fn schema(
    name: CString,
    format: CString,
    children: Vec<*mut ArrowSchema>,
    flags: i64,
) -> ArrowSchema {
    let mut private = Box::new(SchemaPrivate {
        _format: format,
        _name: name,
        children,
    });
    ArrowSchema {
        format: private._format.as_ptr(),
        name: private._name.as_ptr(),
        metadata: std::ptr::null(),
        flags,
        n_children: private.children.len() as i64,
        children: private.children.as_mut_ptr(),
        dictionary: std::ptr::null_mut(),
        release: Some(release_schema),
        private_data: Box::into_raw(private).cast(),
    }
}

fn array(
    len: usize,
    null_count: usize,
    buffers: Vec<*const c_void>,
    children: Vec<*mut ArrowArray>,
    owner: Box<dyn Any>,
) -> ArrowArray {
    let mut private = Box::new(ArrayPrivate {
        buffers,
        children,
        _owner: owner,
    });
    ArrowArray {
        length: len as i64,
        null_count: null_count as i64,
        offset: 0,
        n_buffers: private.buffers.len() as i64,
        n_children: private.children.len() as i64,
        buffers: private.buffers.as_mut_ptr(),
        children: private.children.as_mut_ptr(),
        dictionary: std::ptr::null_mut(),
        release: Some(release_array),
        private_data: Box::into_raw(private).cast(),
    }
}

/// A C struct handed to a capsule; it holds raw pointers, but its memory is only ever touched by
/// whoever owns the struct (the capsule, then the consumer that moves it out).
struct Exported<T>(T);
// SAFETY: see above; nothing in the struct is shared between threads.
unsafe impl<T> Send for Exported<T> {}

/// Columns of equal length, handed to polars as one struct array by `pl.DataFrame(table)`.
#[pyclass(module = "burstcore._burstcore")]
pub struct ArrowTable {
    capsules: Option<(Py<PyCapsule>, Py<PyCapsule>)>,
}

impl ArrowTable {
    pub fn new(py: Python<'_>, len: usize, columns: Vec<Column>) -> PyResult<Self> {
        if let Some(c) = columns.iter().find(|c| c.len != len) {
            return Err(PyValueError::new_err(format!(
                "column {:?} has {} rows, not {len}",
                c.name, c.len
            )));
        }
        let mut child_schemas = Vec::with_capacity(columns.len());
        let mut child_arrays = Vec::with_capacity(columns.len());
        for c in columns {
            child_schemas.push(Box::into_raw(Box::new(schema(
                c.name,
                c.format,
                Vec::new(),
                ARROW_FLAG_NULLABLE,
            ))));
            child_arrays.push(Box::into_raw(Box::new(array(
                c.len,
                c.null_count,
                c.buffers,
                Vec::new(),
                c.owner,
            ))));
        }
        // Built before anything can fail, so that the capsules' destructors own every child.
        let top_schema = schema(cstring("")?, cstring("+s")?, child_schemas, 0);
        let top_array = array(len, 0, vec![std::ptr::null()], child_arrays, Box::new(()));
        let schema_capsule = PyCapsule::new_with_destructor(
            py,
            Exported(top_schema),
            Some(cstring("arrow_schema")?),
            |mut s: Exported<ArrowSchema>, _| {
                if let Some(release) = s.0.release {
                    // SAFETY: not moved out by a consumer (release is still set): ours to free.
                    unsafe { release(&mut s.0) }
                }
            },
        )?;
        let array_capsule = PyCapsule::new_with_destructor(
            py,
            Exported(top_array),
            Some(cstring("arrow_array")?),
            |mut a: Exported<ArrowArray>, _| {
                if let Some(release) = a.0.release {
                    // SAFETY: as for the schema.
                    unsafe { release(&mut a.0) }
                }
            },
        )?;
        Ok(ArrowTable {
            capsules: Some((schema_capsule.unbind(), array_capsule.unbind())),
        })
    }
}

#[pymethods]
impl ArrowTable {
    /// The PyCapsule protocol: (schema, array) capsules of the struct array. The columns move
    /// to the caller, so a second call is an error.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_array__(
        &mut self,
        requested_schema: Option<Bound<'_, PyAny>>,
    ) -> PyResult<(Py<PyCapsule>, Py<PyCapsule>)> {
        let _ = requested_schema; // the columns' own types are the only ones offered
        self.capsules
            .take()
            .ok_or_else(|| PyValueError::new_err("the columns were already handed over"))
    }
}
