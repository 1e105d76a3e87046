//! Per-GPU memory through NVML, loaded at run time with dlopen(libnvidia-ml.so.1): one library
//! call per GPU per sample, where forking nvidia-smi would cost tens of ms of CPU each time.
//! It must not link against NVML (the binary runs on machines without a driver) nor panic
//! when the library, the driver or a device is missing: it reports why instead.

use std::ffi::{CStr, c_char, c_uint, c_void};

type NvmlReturn = c_uint;
type NvmlDevice = *mut c_void;

#[repr(C)]
#[derive(Default)]
struct NvmlMemory {
    total: u64,
    free: u64,
    used: u64,
}

/// nvmlMemory_v2_t: `used` excludes memory the driver reserves, as nvidia-smi reports it.
#[repr(C)]
#[derive(Default)]
struct NvmlMemoryV2 {
    version: c_uint,
    total: u64,
    reserved: u64,
    free: u64,
    used: u64,
}

/// NVML_STRUCT_VERSION(Memory, 2).
const NVML_MEMORY_V2: c_uint = (std::mem::size_of::<NvmlMemoryV2>() as c_uint) | (2 << 24);

type FnVoid = unsafe extern "C" fn() -> NvmlReturn;
type FnCount = unsafe extern "C" fn(*mut c_uint) -> NvmlReturn;
type FnHandle = unsafe extern "C" fn(c_uint, *mut NvmlDevice) -> NvmlReturn;
type FnMemory = unsafe extern "C" fn(NvmlDevice, *mut NvmlMemory) -> NvmlReturn;
type FnMemoryV2 = unsafe extern "C" fn(NvmlDevice, *mut NvmlMemoryV2) -> NvmlReturn;
type FnErrorString = unsafe extern "C" fn(NvmlReturn) -> *const c_char;

/// A loaded, initialised NVML with the handles of every device.
pub(crate) struct Nvml {
    shutdown: FnVoid,
    memory_info: FnMemory,
    /// Preferred when the driver has it (R510+), so samples match nvidia-smi's memory.used.
    memory_info_v2: Option<FnMemoryV2>,
    error_string: FnErrorString,
    devices: Vec<(u32, NvmlDevice)>,
}

/// Memory of one GPU at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GpuMemory {
    pub index: u32,
    pub used: u64,
    pub total: u64,
}

impl Nvml {
    /// Load and initialise NVML; Err says why GPU sampling is not available.
    pub fn load() -> Result<Nvml, String> {
        // SAFETY: dlopen/dlsym with NUL-terminated names; the symbols are cast to the
        // signatures documented in nvml.h for these exact versioned entry points.
        unsafe {
            let lib = libc::dlopen(
                c"libnvidia-ml.so.1".as_ptr(),
                libc::RTLD_NOW | libc::RTLD_LOCAL,
            );
            if lib.is_null() {
                return Err(format!("libnvidia-ml.so.1 not loadable: {}", dlerror()));
            }
            let sym = |name: &CStr| -> Result<*mut c_void, String> {
                let p = libc::dlsym(lib, name.as_ptr());
                if p.is_null() {
                    Err(format!("NVML lacks {}", name.to_string_lossy()))
                } else {
                    Ok(p)
                }
            };
            let init: FnVoid = std::mem::transmute(sym(c"nvmlInit_v2")?);
            let shutdown: FnVoid = std::mem::transmute(sym(c"nvmlShutdown")?);
            let count: FnCount = std::mem::transmute(sym(c"nvmlDeviceGetCount_v2")?);
            let handle: FnHandle = std::mem::transmute(sym(c"nvmlDeviceGetHandleByIndex_v2")?);
            let memory_info: FnMemory = std::mem::transmute(sym(c"nvmlDeviceGetMemoryInfo")?);
            let error_string: FnErrorString = std::mem::transmute(sym(c"nvmlErrorString")?);
            let memory_info_v2: Option<FnMemoryV2> = sym(c"nvmlDeviceGetMemoryInfo_v2")
                .ok()
                .map(|p| std::mem::transmute::<*mut c_void, FnMemoryV2>(p));
            // The library stays loaded for the life of the process: unloading a driver
            // library that may have started threads is not worth the risk.
            let rc = init();
            if rc != 0 {
                return Err(format!(
                    "nvmlInit failed: {}",
                    CStr::from_ptr(error_string(rc)).to_string_lossy()
                ));
            }
            let mut n: c_uint = 0;
            let rc = count(&mut n);
            let mut nvml = Nvml {
                shutdown,
                memory_info,
                memory_info_v2,
                error_string,
                devices: Vec::new(),
            };
            if rc != 0 {
                return Err(format!("nvmlDeviceGetCount failed: {}", nvml.err(rc)));
            }
            for i in 0..n {
                let mut d: NvmlDevice = std::ptr::null_mut();
                // A GPU that fell off the bus has no handle; the rest are still sampled.
                if handle(i, &mut d) == 0 {
                    nvml.devices.push((i, d));
                }
            }
            if nvml.devices.is_empty() {
                return Err(format!("NVML sees {n} GPUs, none with a usable handle"));
            }
            Ok(nvml)
        }
    }

    fn err(&self, rc: NvmlReturn) -> String {
        // SAFETY: nvmlErrorString returns a static NUL-terminated string for any code.
        unsafe { CStr::from_ptr((self.error_string)(rc)) }
            .to_string_lossy()
            .into_owned()
    }

    pub fn device_count(&self) -> usize {
        self.devices.len()
    }

    /// Memory of every device that answers; a device that errors is left out of this sample.
    pub fn sample(&self, out: &mut Vec<GpuMemory>) {
        out.clear();
        for &(index, dev) in &self.devices {
            if let Some(v2) = self.memory_info_v2 {
                let mut m = NvmlMemoryV2 {
                    version: NVML_MEMORY_V2,
                    ..NvmlMemoryV2::default()
                };
                // SAFETY: a handle from nvmlDeviceGetHandleByIndex_v2 and a versioned struct
                // we own, laid out as nvml.h's nvmlMemory_v2_t.
                if unsafe { v2(dev, &mut m) } == 0 {
                    out.push(GpuMemory {
                        index,
                        used: m.used,
                        total: m.total,
                    });
                    continue;
                }
            }
            let mut m = NvmlMemory::default();
            // SAFETY: a handle from nvmlDeviceGetHandleByIndex_v2 and a struct we own.
            if unsafe { (self.memory_info)(dev, &mut m) } == 0 {
                out.push(GpuMemory {
                    index,
                    used: m.used,
                    total: m.total,
                });
            }
        }
    }
}

impl Drop for Nvml {
    fn drop(&mut self) {
        // SAFETY: paired with the successful nvmlInit_v2 in `load`.
        unsafe { (self.shutdown)() };
    }
}

fn dlerror() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated string valid until the next dl call.
    unsafe {
        let e = libc::dlerror();
        if e.is_null() {
            "unknown error".into()
        } else {
            CStr::from_ptr(e).to_string_lossy().into_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_never_panics_and_explains_absence() {
        match Nvml::load() {
            Ok(n) => {
                let mut v = Vec::new();
                n.sample(&mut v);
                eprintln!("NVML: {} GPUs: {v:?}", n.device_count());
                assert!(v.iter().all(|g| g.used <= g.total));
            }
            Err(why) => {
                eprintln!("no NVML: {why}");
                assert!(!why.is_empty());
            }
        }
    }
}
