//! Columns into polars through the Arrow C data interface (the PyCapsule protocol,
//! `__arrow_c_array__`): one array per column. polars adopts the buffers as they are (no copy, no
//! pyarrow): validity bitmaps built in Rust become its null masks, and the address strings arrive
//! as a `Utf8View` column, which is polars' own `String` layout. Each buffer is a Rust `Vec` freed
//! by the array's `release` callback whenever polars drops the last reference.
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
    pub fn len(&self) -> usize {
        self.len
    }

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
    _owner: Box<dyn Any>,
}

struct SchemaPrivate {
    format: CString,
    name: CString,
}

unsafe extern "C" fn release_array(array: *mut ArrowArray) {
    // SAFETY: the consumer passes an array this module made, whose private_data is the
    // ArrayPrivate it was given; release runs once (it then clears itself).
    unsafe {
        let Some(a) = array.as_mut() else { return };
        if a.release.is_none() || a.private_data.is_null() {
            return;
        }
        drop(Box::from_raw(a.private_data.cast::<ArrayPrivate>()));
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
        drop(Box::from_raw(s.private_data.cast::<SchemaPrivate>()));
        s.private_data = std::ptr::null_mut();
        s.release = None;
    }
}

fn schema(name: CString, format: CString, flags: i64) -> ArrowSchema {
    let private = Box::new(SchemaPrivate { format, name });
    ArrowSchema {
        format: private.format.as_ptr(),
        name: private.name.as_ptr(),
        metadata: std::ptr::null(),
        flags,
        n_children: 0,
        children: std::ptr::null_mut(),
        dictionary: std::ptr::null_mut(),
        release: Some(release_schema),
        private_data: Box::into_raw(private).cast(),
    }
}

fn array(
    len: usize,
    null_count: usize,
    buffers: Vec<*const c_void>,
    owner: Box<dyn Any>,
) -> ArrowArray {
    let mut private = Box::new(ArrayPrivate {
        buffers,
        _owner: owner,
    });
    ArrowArray {
        length: len as i64,
        null_count: null_count as i64,
        offset: 0,
        n_buffers: private.buffers.len() as i64,
        n_children: 0,
        buffers: private.buffers.as_mut_ptr(),
        children: std::ptr::null_mut(),
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

/// One column, handed to polars by `pl.Series(column)`. Each column is its own array, released
/// on its own: a frame that keeps some columns does not hold the memory of the others.
#[pyclass(module = "burstcore._burstcore")]
pub struct ArrowColumn {
    capsules: Option<(Py<PyCapsule>, Py<PyCapsule>)>,
}

impl ArrowColumn {
    pub fn new(py: Python<'_>, c: Column) -> PyResult<Self> {
        let Column {
            name,
            format,
            len,
            null_count,
            buffers,
            owner,
        } = c;
        // Both structs exist before anything can fail, and from then on belong to the capsules,
        // whose destructors release them unless a consumer moved them out.
        let schema = schema(name, format, ARROW_FLAG_NULLABLE);
        let array = array(len, null_count, buffers, owner);
        let schema_capsule = PyCapsule::new_with_destructor(
            py,
            Exported(schema),
            Some(c"arrow_schema".to_owned()),
            |mut s: Exported<ArrowSchema>, _| {
                if let Some(release) = s.0.release {
                    // SAFETY: not moved out by a consumer (release is still set): ours to free.
                    unsafe { release(&mut s.0) }
                }
            },
        )?;
        let array_capsule = PyCapsule::new_with_destructor(
            py,
            Exported(array),
            Some(c"arrow_array".to_owned()),
            |mut a: Exported<ArrowArray>, _| {
                if let Some(release) = a.0.release {
                    // SAFETY: as for the schema.
                    unsafe { release(&mut a.0) }
                }
            },
        )?;
        Ok(ArrowColumn {
            capsules: Some((schema_capsule.unbind(), array_capsule.unbind())),
        })
    }
}

#[pymethods]
impl ArrowColumn {
    /// The PyCapsule protocol: (schema, array) capsules. The column moves to the caller, so a
    /// second call is an error.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_array__(
        &mut self,
        requested_schema: Option<Bound<'_, PyAny>>,
    ) -> PyResult<(Py<PyCapsule>, Py<PyCapsule>)> {
        let _ = requested_schema; // the column's own type is the only one offered
        self.capsules
            .take()
            .ok_or_else(|| PyValueError::new_err("the column was already handed over"))
    }
}
