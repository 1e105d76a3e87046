//! The catalog of fact names and the set of facts gathered from one analysis.
//! The catalog is the contract rule files are checked against: a rule that names a fact
//! not listed here fails to load. Each entry says what it means as one `Text` in English and
//! Chinese (`facts --catalog` prints the report's language). It must not know how any fact is parsed.

use crate::model::{Fact, FactValue, Phase, Text};
use std::collections::BTreeMap;

/// Units, so that templates can format a value for people (`64 MiB`, not `67108864`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Bytes,
    Count,
    Seconds,
    Percent,
    Celsius,
    Text,
    Bool,
}

/// One catalog entry. `<n>`-style segments in a name match any one segment
/// (`gpu.<index>.memory_used_bytes` matches `gpu.0.memory_used_bytes`).
pub struct FactSpec {
    pub name: &'static str,
    pub unit: Unit,
    /// What it means, in both languages: names, files, fields and backticked spans the same
    /// in each.
    pub doc: Text<&'static str>,
}

/// `spec!(name, Unit, doc, doc_zh)`: both descriptions are required.
macro_rules! spec {
    ($name:expr, $unit:ident, $en:expr, $zh:expr) => {
        FactSpec {
            name: $name,
            unit: Unit::$unit,
            doc: Text { en: $en, zh: $zh },
        }
    };
}

/// Every fact name the tool can emit. Sorted by name; a test keeps it so.
pub static CATALOG: &[FactSpec] = &[
    spec!(
        "cgroup.failcnt",
        Count,
        "times usage hit the v1 limit (memory.failcnt)",
        "用量触及 v1 上限的次数（memory.failcnt）"
    ),
    spec!(
        "cgroup.high_events",
        Count,
        "times usage went over memory.high (v2 memory.events `high`)",
        "用量超过 memory.high 的次数（v2 memory.events `high`）"
    ),
    spec!(
        "cgroup.local.max_events",
        Count,
        "memory.events.local `max`: limit hits in this cgroup only, not its children",
        "memory.events.local `max`：只计本 cgroup（不含子 cgroup）触及上限的次数"
    ),
    spec!(
        "cgroup.local.oom",
        Count,
        "memory.events.local `oom`: OOM path runs in this cgroup only",
        "memory.events.local `oom`：只计本 cgroup 走到 OOM 流程的次数"
    ),
    spec!(
        "cgroup.local.oom_kill",
        Count,
        "memory.events.local `oom_kill`: OOM kills in this cgroup only",
        "memory.events.local `oom_kill`：只计本 cgroup 内的 OOM kill 次数"
    ),
    spec!(
        "cgroup.max_events",
        Count,
        "times usage was about to exceed memory.max (v2 memory.events `max`)",
        "用量即将超过 memory.max 的次数（v2 memory.events `max`）"
    ),
    spec!(
        "cgroup.memory_current_bytes",
        Bytes,
        "cgroup memory usage when captured (v2 memory.current, v1 memory.usage_in_bytes)",
        "采集时 cgroup 的内存用量（v2 memory.current，v1 memory.usage_in_bytes）"
    ),
    spec!(
        "cgroup.memory_high_bytes",
        Bytes,
        "cgroup memory.high throttling threshold; absent when `max`",
        "cgroup 的 memory.high 限流阈值；为 `max` 时没有此项"
    ),
    spec!(
        "cgroup.memory_limit_bytes",
        Bytes,
        "cgroup memory limit (v2 memory.max, v1 memory.limit_in_bytes); absent when unlimited",
        "cgroup 内存上限（v2 memory.max，v1 memory.limit_in_bytes）；不限制时没有此项"
    ),
    spec!(
        "cgroup.memory_peak_bytes",
        Bytes,
        "cgroup peak memory usage (v2 memory.peak, v1 memory.max_usage_in_bytes)",
        "cgroup 内存用量峰值（v2 memory.peak，v1 memory.max_usage_in_bytes）"
    ),
    spec!(
        "cgroup.oom",
        Count,
        "times the cgroup hit its limit and the OOM path ran (v2 memory.events `oom`)",
        "cgroup 触及上限并走到 OOM 流程的次数（v2 memory.events `oom`）"
    ),
    spec!(
        "cgroup.oom_group",
        Bool,
        "memory.oom.group: the OOM killer kills the whole cgroup at once",
        "memory.oom.group：OOM killer 一次杀掉整个 cgroup"
    ),
    spec!(
        "cgroup.oom_group_kill",
        Count,
        "v2 memory.events `oom_group_kill`: whole-group OOM kills",
        "v2 memory.events `oom_group_kill`：整组 OOM kill 的次数"
    ),
    spec!(
        "cgroup.oom_kill",
        Count,
        "processes killed by the OOM killer in the cgroup (v2 memory.events `oom_kill`, v1 memory.oom_control)",
        "cgroup 内被 OOM killer 杀掉的进程数（v2 memory.events `oom_kill`，v1 memory.oom_control）"
    ),
    spec!(
        "cgroup.oom_kill_disable",
        Bool,
        "v1 memory.oom_control `oom_kill_disable`",
        "v1 memory.oom_control 的 `oom_kill_disable`（是否关闭了 OOM killer）"
    ),
    spec!(
        "cgroup.stat.anon_bytes",
        Bytes,
        "anonymous memory charged to the cgroup (memory.stat `anon`, v1 `rss`)",
        "计入该 cgroup 的匿名内存（memory.stat `anon`，v1 `rss`）"
    ),
    spec!(
        "cgroup.stat.file_bytes",
        Bytes,
        "page cache charged to the cgroup (memory.stat `file`, v1 `cache`)",
        "计入该 cgroup 的页缓存（memory.stat `file`，v1 `cache`）"
    ),
    spec!(
        "cgroup.stat.shmem_bytes",
        Bytes,
        "shmem/tmpfs (incl. /dev/shm) charged to the cgroup (memory.stat `shmem`)",
        "计入该 cgroup 的 shmem/tmpfs，含 /dev/shm（memory.stat `shmem`）"
    ),
    spec!(
        "cgroup.swap_current_bytes",
        Bytes,
        "swap used by the cgroup (memory.swap.current)",
        "cgroup 已用的 swap（memory.swap.current）"
    ),
    spec!(
        "cgroup.swap_fail",
        Count,
        "swap allocations that failed (memory.swap.events `fail`)",
        "swap 分配失败的次数（memory.swap.events `fail`）"
    ),
    spec!(
        "cgroup.swap_limit_bytes",
        Bytes,
        "swap limit (memory.swap.max; v1 memory.memsw.limit_in_bytes is memory+swap); absent when unlimited",
        "swap 上限（memory.swap.max；v1 的 memory.memsw.limit_in_bytes 是内存加 swap 的总和）；不限制时没有此项"
    ),
    spec!(
        "cgroup.under_oom",
        Bool,
        "v1 memory.oom_control `under_oom`: the cgroup is in OOM right now",
        "v1 memory.oom_control 的 `under_oom`：该 cgroup 此刻正处于 OOM 状态"
    ),
    spec!(
        "config.<key>",
        Text,
        "a training setting as the run printed or kept it (args dict, Namespace, TrainingArguments, command-line flag, ds_config JSON, YAML), key lowercased with nested keys joined by _; read only by `diff`",
        "运行时打印或保存的一项训练设置（args 字典、Namespace、TrainingArguments、命令行参数、ds_config JSON、YAML），键名转为小写，嵌套的键用 _ 连接；只有 `diff` 使用"
    ),
    spec!(
        "core.args",
        Text,
        "command line of the process that dumped core (NT_PRPSINFO, gdb `Core was generated by`, coredumpctl)",
        "产生 core dump 的进程的命令行（NT_PRPSINFO、gdb 的 `Core was generated by`、coredumpctl）"
    ),
    spec!(
        "core.crash_component",
        Text,
        "the part of the training stack the crashing pc is in, by its module: libtorch, NCCL, CUDA driver, cuBLAS, cuDNN, c10, libc, CPython, …",
        "崩溃时 pc 所在的训练栈组件（按模块判断）：libtorch、NCCL、CUDA driver、cuBLAS、cuDNN、c10、libc、CPython 等"
    ),
    spec!(
        "core.crash_module",
        Text,
        "mapped file (library or executable) holding the crashing thread's pc, e.g. /usr/lib/x86_64-linux-gnu/libc.so.6",
        "崩溃线程 pc 所在的映射文件（库或可执行文件），例如 /usr/lib/x86_64-linux-gnu/libc.so.6"
    ),
    spec!(
        "core.crash_symbol",
        Text,
        "function at the crashing pc, when symbols could be read and verified",
        "崩溃 pc 处的函数（能读到并核实符号时）"
    ),
    spec!(
        "core.exe",
        Text,
        "executable of the process that dumped core",
        "产生 core dump 的进程的可执行文件"
    ),
    spec!(
        "core.fault_addr",
        Text,
        "faulting address from NT_SIGINFO, hex",
        "NT_SIGINFO 中的出错地址，十六进制"
    ),
    spec!(
        "core.fault_mapping",
        Text,
        "file mapped at the fault address, or [anonymous]/[stack]/[heap]/[vdso]/[unmapped]",
        "出错地址处映射的文件，或 [anonymous]/[stack]/[heap]/[vdso]/[unmapped]"
    ),
    spec!(
        "core.native_user_frame",
        Text,
        "innermost native frame of the crashing thread in the user's own code (not libc, CPython, libtorch, CUDA, NCCL or an installed package): function+0x1b at file.c:42 in libx.so",
        "崩溃线程在用户自己代码里（不是 libc、CPython、libtorch、CUDA、NCCL 或已安装的包）最内层的 native 帧：function+0x1b at file.c:42 in libx.so"
    ),
    spec!(
        "core.owner",
        Text,
        "the process the core is of, tied by its pid to the run's lines (torchrun's failure table, a DataLoader worker's death, a rank's pid prefix) or lying beside one rank's log: `rank 1 (host node7) pid 4242`, `DataLoader worker pid 542 of rank 0`",
        "core 属于哪个进程：按 pid 对上运行日志里的行（torchrun 的失败表、DataLoader worker 的死亡报告、带 pid 前缀的 rank 日志行），或 core 就在某一个 rank 的日志旁：`rank 1 (host node7) pid 4242`、`DataLoader worker pid 542 of rank 0`"
    ),
    spec!(
        "core.pid",
        Count,
        "process id of the process that dumped core",
        "产生 core dump 的进程的 pid"
    ),
    spec!(
        "core.python_frame",
        Text,
        "innermost Python frame of the crashing thread, as a traceback line: File \"train.py\", line 212, in collate_fn",
        "崩溃线程最内层的 Python 帧，写成 traceback 的一行：File \"train.py\", line 212, in collate_fn"
    ),
    spec!(
        "core.python_user_frame",
        Text,
        "innermost Python frame of the crashing thread outside the standard library and installed packages, as a traceback line",
        "崩溃线程在标准库和已安装包之外最内层的 Python 帧，写成 traceback 的一行"
    ),
    spec!(
        "core.sender_pid",
        Count,
        "pid that sent the signal, for signals sent by a process (si_code SI_USER/SI_TKILL/SI_QUEUE)",
        "发送该信号的 pid，信号由进程发出时才有（si_code 为 SI_USER/SI_TKILL/SI_QUEUE）"
    ),
    spec!(
        "core.si_code",
        Text,
        "signal code name, e.g. BUS_ADRERR",
        "信号代码的名字，例如 BUS_ADRERR"
    ),
    spec!(
        "core.signal",
        Text,
        "signal that killed the process, e.g. SIGBUS",
        "杀死进程的信号，例如 SIGBUS"
    ),
    spec!(
        "core.stack_modules",
        Text,
        "distinct mapped files of the crashing thread's stack frames, innermost first, space-separated",
        "崩溃线程各栈帧所在的映射文件（去重），最内层在前，以空格分隔"
    ),
    spec!(
        "core.threads",
        Count,
        "threads in the core (NT_PRSTATUS notes)",
        "core 中的线程数（NT_PRSTATUS note 的个数）"
    ),
    spec!(
        "core.tid",
        Count,
        "thread id of the crashing thread",
        "崩溃线程的线程 id"
    ),
    spec!(
        "core.time",
        Text,
        "when the process dumped core, as coredumpctl printed it (`Timestamp:`), without the relative `(… ago)`",
        "进程产生 core dump 的时间，按 coredumpctl 打印的样子（`Timestamp:`），去掉相对时间 `(… ago)`"
    ),
    spec!(
        "disk.<n>.avail_bytes",
        Bytes,
        "df: available bytes on the n-th non-/dev/shm row",
        "df：第 n 个非 /dev/shm 行的可用字节数"
    ),
    spec!(
        "disk.<n>.filesystem",
        Text,
        "df: filesystem (device) of the n-th non-/dev/shm row",
        "df：第 n 个非 /dev/shm 行的文件系统（设备）"
    ),
    spec!(
        "disk.<n>.fstype",
        Text,
        "df -T: filesystem type of the n-th non-/dev/shm row",
        "df -T：第 n 个非 /dev/shm 行的文件系统类型"
    ),
    spec!(
        "disk.<n>.mount",
        Text,
        "df: mount point of the n-th non-/dev/shm row (find the checkpoint disk by it)",
        "df：第 n 个非 /dev/shm 行的挂载点（据此找到存 checkpoint 的磁盘）"
    ),
    spec!(
        "disk.<n>.size_bytes",
        Bytes,
        "df: size of the n-th non-/dev/shm row",
        "df：第 n 个非 /dev/shm 行的容量"
    ),
    spec!(
        "disk.<n>.use_percent",
        Percent,
        "df: Use% of the n-th non-/dev/shm row",
        "df：第 n 个非 /dev/shm 行的 Use%"
    ),
    spec!(
        "disk.<n>.used_bytes",
        Bytes,
        "df: used bytes of the n-th non-/dev/shm row",
        "df：第 n 个非 /dev/shm 行的已用字节数"
    ),
    spec!(
        "docker.exit_code",
        Count,
        "docker inspect State.ExitCode",
        "docker inspect 的 State.ExitCode（容器退出码）"
    ),
    spec!(
        "docker.ipc_mode",
        Text,
        "docker inspect HostConfig.IpcMode (`host` shares the host's /dev/shm)",
        "docker inspect 的 HostConfig.IpcMode（`host` 表示共用宿主机的 /dev/shm）"
    ),
    spec!(
        "docker.memory_limit_bytes",
        Bytes,
        "docker inspect HostConfig.Memory; absent when 0 (no limit)",
        "docker inspect 的 HostConfig.Memory（内存上限）；为 0（不限制）时没有此项"
    ),
    spec!(
        "docker.memory_swap_limit_bytes",
        Bytes,
        "docker inspect HostConfig.MemorySwap (memory+swap); absent when 0 or -1",
        "docker inspect 的 HostConfig.MemorySwap（内存加 swap）；为 0 或 -1 时没有此项"
    ),
    spec!(
        "docker.oom_killed",
        Bool,
        "docker inspect State.OOMKilled",
        "docker inspect 的 State.OOMKilled（容器是否因 OOM 被杀）"
    ),
    spec!(
        "docker.shm_size_bytes",
        Bytes,
        "docker inspect HostConfig.ShmSize (/dev/shm size of the container)",
        "docker inspect 的 HostConfig.ShmSize（容器的 /dev/shm 大小）"
    ),
    spec!(
        "docker.ulimit.<name>.hard",
        Count,
        "docker inspect HostConfig.Ulimits hard value (-1: unlimited)",
        "docker inspect 的 HostConfig.Ulimits 硬限制（-1：不限制）"
    ),
    spec!(
        "docker.ulimit.<name>.soft",
        Count,
        "docker inspect HostConfig.Ulimits soft value (-1: unlimited)",
        "docker inspect 的 HostConfig.Ulimits 软限制（-1：不限制）"
    ),
    spec!(
        "env.<name>",
        Text,
        "an environment variable that steers training (NCCL_*, TORCH_*, CUDA_*, MASTER_PORT, …); secrets never kept",
        "影响训练的环境变量（NCCL_*、TORCH_*、CUDA_*、MASTER_PORT 等）；密钥从不保存"
    ),
    spec!(
        "gpu.<index>.bus_id",
        Text,
        "PCI bus id of GPU index",
        "该编号 GPU 的 PCI 总线 id"
    ),
    spec!(
        "gpu.<index>.ecc_corrected_aggregate",
        Count,
        "corrected ECC errors since the counters were reset (nvidia-smi)",
        "自计数器清零以来已纠正的 ECC 错误数（nvidia-smi）"
    ),
    spec!(
        "gpu.<index>.ecc_corrected_volatile",
        Count,
        "corrected ECC errors since the driver loaded (nvidia-smi)",
        "自驱动加载以来已纠正的 ECC 错误数（nvidia-smi）"
    ),
    spec!(
        "gpu.<index>.ecc_uncorrected_aggregate",
        Count,
        "uncorrected ECC errors since the counters were reset (nvidia-smi)",
        "自计数器清零以来未纠正的 ECC 错误数（nvidia-smi）"
    ),
    spec!(
        "gpu.<index>.ecc_uncorrected_volatile",
        Count,
        "uncorrected ECC errors since the driver loaded (nvidia-smi)",
        "自驱动加载以来未纠正的 ECC 错误数（nvidia-smi）"
    ),
    spec!(
        "gpu.<index>.memory_climb_from_bytes",
        Bytes,
        "GPU <index>'s memory rose through the whole sampled span (trainwreck run's samples or a polled nvidia-smi: each quarter's highest value above the last): its highest in the first quarter",
        "GPU <index> 的显存在整个采样期间一路上涨（trainwreck run 的采样或轮询的 nvidia-smi：每一段的最高值都高于上一段）：第一段里的最高值"
    ),
    spec!(
        "gpu.<index>.memory_peak_bytes",
        Bytes,
        "highest memory used on GPU <index> (nvidia-smi/NVML order) seen while the run was watched",
        "监视运行期间 GPU <index>（按 nvidia-smi/NVML 的顺序）显存用量的最高值"
    ),
    spec!(
        "gpu.<index>.memory_total_bytes",
        Bytes,
        "GPU memory total (nvidia-smi)",
        "GPU 显存总量（nvidia-smi）"
    ),
    spec!(
        "gpu.<index>.memory_used_bytes",
        Bytes,
        "GPU memory in use when captured (nvidia-smi)",
        "采集时已用的 GPU 显存（nvidia-smi）"
    ),
    spec!(
        "gpu.<index>.name",
        Text,
        "GPU product name (nvidia-smi)",
        "GPU 型号名称（nvidia-smi）"
    ),
    spec!(
        "gpu.<index>.process_memory_bytes",
        Bytes,
        "GPU memory held by the processes nvidia-smi lists on this GPU",
        "nvidia-smi 列出的这张 GPU 上各进程占用的显存"
    ),
    spec!(
        "gpu.<index>.processes",
        Count,
        "processes nvidia-smi lists on this GPU",
        "nvidia-smi 列出的这张 GPU 上的进程数"
    ),
    spec!(
        "gpu.<index>.remapped_rows_correctable",
        Count,
        "rows remapped for correctable errors",
        "因可纠正错误而重映射的行数"
    ),
    spec!(
        "gpu.<index>.remapped_rows_failure",
        Bool,
        "a row remapping failed (the GPU needs service)",
        "行重映射失败（这张 GPU 需要维修）"
    ),
    spec!(
        "gpu.<index>.remapped_rows_pending",
        Bool,
        "row remapping pending: takes effect after a GPU reset",
        "有待生效的行重映射：重置 GPU 后生效"
    ),
    spec!(
        "gpu.<index>.remapped_rows_uncorrectable",
        Count,
        "rows remapped for uncorrectable errors",
        "因不可纠正错误而重映射的行数"
    ),
    spec!(
        "gpu.<index>.retired_pages_dbe",
        Count,
        "pages retired for double-bit ECC errors",
        "因双比特 ECC 错误而退役的页数"
    ),
    spec!(
        "gpu.<index>.retired_pages_pending",
        Bool,
        "page retirement pending: takes effect after a reboot",
        "有待生效的页退役：重启后生效"
    ),
    spec!(
        "gpu.<index>.retired_pages_sbe",
        Count,
        "pages retired for single-bit ECC errors",
        "因单比特 ECC 错误而退役的页数"
    ),
    spec!(
        "gpu.<index>.smi_error",
        Text,
        "fields nvidia-smi printed as ERR!/Unknown Error for this GPU",
        "nvidia-smi 对这张 GPU 显示为 ERR!/Unknown Error 的字段"
    ),
    spec!(
        "gpu.<index>.temperature_c",
        Celsius,
        "GPU temperature (nvidia-smi)",
        "GPU 温度（nvidia-smi）"
    ),
    spec!(
        "gpu.<index>.utilization_percent",
        Percent,
        "GPU utilisation when captured (nvidia-smi)",
        "采集时的 GPU 利用率（nvidia-smi）"
    ),
    spec!(
        "gpu.<index>.uuid",
        Text,
        "the GPU's UUID (`GPU-…`, `MIG-…`; nvidia-smi -q, --query-gpu=uuid): the same card wherever it moves, what `history gpus` counts by",
        "GPU 的 UUID（`GPU-…`、`MIG-…`；nvidia-smi -q、--query-gpu=uuid）：同一块卡无论换到哪台机器都不变，`history gpus` 按它统计"
    ),
    spec!(
        "host.commit_limit_bytes",
        Bytes,
        "CommitLimit from /proc/meminfo",
        "/proc/meminfo 中的 CommitLimit"
    ),
    spec!(
        "host.committed_bytes",
        Bytes,
        "Committed_AS from /proc/meminfo",
        "/proc/meminfo 中的 Committed_AS"
    ),
    spec!(
        "host.mem_available_bytes",
        Bytes,
        "MemAvailable from /proc/meminfo or free",
        "/proc/meminfo 或 free 中的 MemAvailable"
    ),
    spec!(
        "host.mem_available_min_bytes",
        Bytes,
        "lowest host MemAvailable seen while the run was watched",
        "监视运行期间主机 MemAvailable 的最低值"
    ),
    spec!(
        "host.mem_free_bytes",
        Bytes,
        "MemFree from /proc/meminfo, `free` column of free",
        "/proc/meminfo 中的 MemFree，即 free 的 `free` 列"
    ),
    spec!(
        "host.mem_total_bytes",
        Bytes,
        "MemTotal from /proc/meminfo or free",
        "/proc/meminfo 或 free 中的 MemTotal"
    ),
    spec!(
        "host.mem_used_bytes",
        Bytes,
        "`used` column of free",
        "free 的 `used` 列"
    ),
    spec!(
        "host.shmem_bytes",
        Bytes,
        "Shmem from /proc/meminfo or free's `shared`: tmpfs incl. /dev/shm",
        "/proc/meminfo 中的 Shmem 或 free 的 `shared`：tmpfs，含 /dev/shm"
    ),
    spec!(
        "host.swap_free_bytes",
        Bytes,
        "SwapFree from /proc/meminfo or free",
        "/proc/meminfo 或 free 中的 SwapFree"
    ),
    spec!(
        "host.swap_total_bytes",
        Bytes,
        "SwapTotal from /proc/meminfo or free",
        "/proc/meminfo 或 free 中的 SwapTotal"
    ),
    spec!(
        "k8s.container.<name>.exit_code",
        Count,
        "exit code of the container's current terminated state",
        "容器当前终止状态（terminated）的退出码"
    ),
    spec!(
        "k8s.container.<name>.last_exit_code",
        Count,
        "exit code of the container's last terminated state (137: SIGKILL)",
        "容器上一次终止状态的退出码（137：SIGKILL）"
    ),
    spec!(
        "k8s.container.<name>.last_reason",
        Text,
        "reason of the container's last termination (OOMKilled, Error, …)",
        "容器上一次终止的原因（OOMKilled、Error 等）"
    ),
    spec!(
        "k8s.container.<name>.memory_limit_bytes",
        Bytes,
        "container memory limit (resources.limits.memory)",
        "容器内存上限（resources.limits.memory）"
    ),
    spec!(
        "k8s.container.<name>.reason",
        Text,
        "reason of the container's current terminated state",
        "容器当前终止状态的原因"
    ),
    spec!(
        "k8s.container.<name>.restarts",
        Count,
        "container restart count",
        "容器重启次数"
    ),
    spec!(
        "k8s.oom_killed",
        Count,
        "container states in the pod with reason OOMKilled",
        "pod 中原因为 OOMKilled 的容器状态数"
    ),
    spec!(
        "k8s.shm_medium_memory",
        Bool,
        "the volume mounted at /dev/shm is an emptyDir with medium Memory",
        "挂载到 /dev/shm 的卷是 medium 为 Memory 的 emptyDir"
    ),
    spec!(
        "k8s.shm_size_limit_bytes",
        Bytes,
        "sizeLimit of the emptyDir mounted at /dev/shm",
        "挂载到 /dev/shm 的 emptyDir 的 sizeLimit"
    ),
    spec!(
        "kernel.boot_time",
        Text,
        "boot time (UTC ISO) from a btime line in a kernel log",
        "从内核日志的 btime 行得到的开机时间（UTC，ISO 格式）"
    ),
    spec!(
        "kernel.edac_ce",
        Count,
        "EDAC corrected memory error lines",
        "EDAC 已纠正内存错误的行数"
    ),
    spec!(
        "kernel.edac_ue",
        Count,
        "EDAC uncorrected memory error lines",
        "EDAC 未纠正内存错误的行数"
    ),
    spec!(
        "kernel.mce",
        Count,
        "machine-check events reported by the kernel",
        "内核报告的 machine-check（MCE）事件数"
    ),
    spec!(
        "kernel.nvlink_error",
        Count,
        "NVLink error lines in the kernel log (other than Xid lines)",
        "内核日志中的 NVLink 错误行数（不含 Xid 行）"
    ),
    spec!(
        "kernel.oom_kill",
        Count,
        "processes killed by the kernel OOM killer (Killed process … lines)",
        "被内核 OOM killer 杀掉的进程数（Killed process … 行）"
    ),
    spec!(
        "kernel.oom_kill_memcg",
        Count,
        "OOM kills constrained by a memory cgroup (CONSTRAINT_MEMCG)",
        "受内存 cgroup 约束的 OOM kill 次数（CONSTRAINT_MEMCG）"
    ),
    spec!(
        "kernel.oom_victim",
        Text,
        "name of an OOM-killed process",
        "被 OOM 杀掉的进程名"
    ),
    spec!(
        "kernel.oom_victim_anon_rss_bytes",
        Bytes,
        "anon-rss of an OOM-killed process when it was killed",
        "被 OOM 杀掉的进程被杀时的 anon-rss"
    ),
    spec!(
        "kernel.pcie_aer",
        Count,
        "PCIe AER error reports",
        "PCIe AER 错误报告数"
    ),
    spec!(
        "kernel.pcie_aer_uncorrected",
        Count,
        "PCIe AER reports of uncorrected (fatal or non-fatal) errors",
        "PCIe AER 报告中未纠正错误（fatal 或 non-fatal）的个数"
    ),
    spec!(
        "kernel.segfault",
        Count,
        "segfault/general-protection lines from user processes",
        "用户进程的 segfault/general protection 行数"
    ),
    spec!(
        "launch.launcher",
        Text,
        "the launcher a logged command line starts (torchrun, deepspeed, accelerate, …); read only by `diff`",
        "日志里的命令行启动的 launcher（torchrun、deepspeed、accelerate 等）；只有 `diff` 使用"
    ),
    spec!(
        "launch.nnodes",
        Count,
        "nodes the launcher was asked for (--nnodes, DeepSpeed nnodes=); read only by `diff`",
        "向 launcher 申请的节点数（--nnodes，DeepSpeed 的 nnodes=）；只有 `diff` 使用"
    ),
    spec!(
        "launch.nproc_per_node",
        Count,
        "processes per node (--nproc-per-node, DeepSpeed num_local_procs=); read only by `diff`",
        "每个节点的进程数（--nproc-per-node，DeepSpeed 的 num_local_procs=）；只有 `diff` 使用"
    ),
    spec!(
        "launch.world_size",
        Count,
        "ranks in the job as the launcher said (DeepSpeed dist_world_size=); read only by `diff`",
        "launcher 给出的任务 rank 总数（DeepSpeed 的 dist_world_size=）；只有 `diff` 使用"
    ),
    spec!(
        "launcher.exit_code",
        Count,
        "exit status the launcher itself reported for the job",
        "launcher 自己报告的任务退出状态"
    ),
    spec!(
        "launcher.exit_signal",
        Text,
        "signal that ended the wrapped command (trainwreck run's exit_status.txt), e.g. SIGBUS",
        "结束被包装命令的信号（trainwreck run 的 exit_status.txt），例如 SIGBUS"
    ),
    spec!(
        "nvidia_smi.device_handle_error",
        Count,
        "`Unable to determine the device handle` lines: a GPU the driver cannot reach",
        "`Unable to determine the device handle` 的行数：驱动访问不到的 GPU"
    ),
    spec!(
        "nvidia_smi.failed",
        Text,
        "nvidia-smi could not run (driver/NVML failure, no devices)",
        "nvidia-smi 无法运行（驱动/NVML 故障，或没有设备）"
    ),
    spec!(
        "rank.<n>.exit_code",
        Count,
        "exit status of rank n's process as the launcher reported it (negative: signal)",
        "launcher 报告的 rank n 进程的退出状态（负数表示信号）"
    ),
    spec!(
        "rank.<n>.exit_signal",
        Text,
        "signal that ended rank n's process, e.g. SIGBUS",
        "结束 rank n 进程的信号，例如 SIGBUS"
    ),
    spec!(
        "run.workers",
        Count,
        "DataLoader workers per rank (num_workers) when the log states it",
        "每个 rank 的 DataLoader worker 数（num_workers），日志里写明时才有"
    ),
    spec!(
        "shm.avail_bytes",
        Bytes,
        "available bytes of the /dev/shm mount (df snapshot)",
        "/dev/shm 挂载点的可用字节数（df 快照）"
    ),
    spec!(
        "shm.peak_bytes",
        Bytes,
        "highest /dev/shm usage seen while the run was watched",
        "监视运行期间 /dev/shm 用量的最高值"
    ),
    spec!(
        "shm.size_bytes",
        Bytes,
        "size of the /dev/shm mount (df snapshot)",
        "/dev/shm 挂载点的大小（df 快照）"
    ),
    spec!(
        "shm.use_percent",
        Percent,
        "Use% of the /dev/shm mount (df snapshot)",
        "/dev/shm 挂载点的 Use%（df 快照）"
    ),
    spec!(
        "shm.used_bytes",
        Bytes,
        "used bytes of the /dev/shm mount (df snapshot)",
        "/dev/shm 挂载点的已用字节数（df 快照）"
    ),
    spec!(
        "slurm.cancelled",
        Text,
        "why Slurm cancelled the job: TIME LIMIT, PREEMPTION, NODE FAILURE, or `unstated`",
        "Slurm 取消任务的原因：TIME LIMIT、PREEMPTION、NODE FAILURE 或 `unstated`"
    ),
    spec!(
        "slurm.elapsed_seconds",
        Seconds,
        "job run time (sacct Elapsed, scontrol RunTime)",
        "任务运行时长（sacct 的 Elapsed，scontrol 的 RunTime）"
    ),
    spec!(
        "slurm.exit_code",
        Count,
        "job exit code (the part before `:` in ExitCode)",
        "任务退出码（ExitCode 中 `:` 之前的部分）"
    ),
    spec!(
        "slurm.exit_signal",
        Count,
        "signal that ended the job (the part after `:` in ExitCode)",
        "结束任务的信号（ExitCode 中 `:` 之后的部分）"
    ),
    spec!("slurm.job_id", Count, "Slurm job id", "Slurm 任务 id"),
    spec!(
        "slurm.max_rss_bytes",
        Bytes,
        "MaxRSS of a job step (sacct)",
        "作业步（job step）的 MaxRSS（sacct）"
    ),
    spec!(
        "slurm.oom_kill",
        Count,
        "OOM-kill events slurmstepd detected in the job's steps",
        "slurmstepd 在任务各作业步中检测到的 OOM kill 事件数"
    ),
    spec!(
        "slurm.out_of_memory_steps",
        Count,
        "sacct rows in state OUT_OF_MEMORY",
        "sacct 中状态为 OUT_OF_MEMORY 的行数"
    ),
    spec!(
        "slurm.reason",
        Text,
        "scontrol Reason (TimeLimit, …)",
        "scontrol 的 Reason（TimeLimit 等）"
    ),
    spec!(
        "slurm.state",
        Text,
        "job state (COMPLETED, FAILED, TIMEOUT, OUT_OF_MEMORY, PREEMPTED, …)",
        "任务状态（COMPLETED、FAILED、TIMEOUT、OUT_OF_MEMORY、PREEMPTED 等）"
    ),
    spec!(
        "slurm.time_limit_seconds",
        Seconds,
        "job time limit; absent when UNLIMITED",
        "任务时限；为 UNLIMITED 时没有此项"
    ),
    spec!(
        "systemd.oomd_kill",
        Count,
        "units killed by systemd-oomd (user-space OOM: no kernel OOM line)",
        "被 systemd-oomd 杀掉的 unit 数（用户态 OOM：内核日志里没有 OOM 行）"
    ),
    spec!(
        "torchelastic.error_code",
        Count,
        "errorCode field of the error file",
        "错误文件中的 errorCode 字段"
    ),
    spec!(
        "torchelastic.exception",
        Text,
        "last exception line of the recorded traceback",
        "记录下的 traceback 中最后一行异常"
    ),
    spec!(
        "torchelastic.exit_code",
        Count,
        "exit code stated in the error file",
        "错误文件中写明的退出码"
    ),
    spec!(
        "torchelastic.message",
        Text,
        "message of the torchelastic error file",
        "torchelastic 错误文件中的 message"
    ),
    spec!(
        "torchelastic.rank",
        Count,
        "rank stated in the error file",
        "错误文件中写明的 rank"
    ),
    spec!(
        "torchelastic.timestamp",
        Count,
        "Unix time at which the error was recorded",
        "记录错误时的 Unix 时间"
    ),
    spec!(
        "ulimit.core_file_size_bytes",
        Bytes,
        "core file size limit (ulimit -c); i64::MAX when unlimited",
        "core 文件大小上限（ulimit -c）；不限制时为 i64::MAX"
    ),
    spec!(
        "ulimit.max_locked_memory_bytes",
        Bytes,
        "locked-memory limit (ulimit -l), soft; i64::MAX when unlimited",
        "锁定内存上限（ulimit -l），软限制；不限制时为 i64::MAX"
    ),
    spec!(
        "ulimit.max_locked_memory_hard_bytes",
        Bytes,
        "locked-memory hard limit (/proc/<pid>/limits)",
        "锁定内存的硬限制（/proc/<pid>/limits）"
    ),
    spec!(
        "ulimit.max_user_processes",
        Count,
        "process limit (ulimit -u); i64::MAX when unlimited",
        "进程数上限（ulimit -u）；不限制时为 i64::MAX"
    ),
    spec!(
        "ulimit.open_files",
        Count,
        "open-file limit (ulimit -n), soft; i64::MAX when unlimited",
        "打开文件数上限（ulimit -n），软限制；不限制时为 i64::MAX"
    ),
    spec!(
        "ulimit.open_files_hard",
        Count,
        "open-file hard limit (/proc/<pid>/limits)",
        "打开文件数的硬限制（/proc/<pid>/limits）"
    ),
    spec!(
        "ulimit.stack_size_bytes",
        Bytes,
        "stack size limit (ulimit -s); i64::MAX when unlimited",
        "栈大小上限（ulimit -s）；不限制时为 i64::MAX"
    ),
    spec!(
        "ulimit.virtual_memory_bytes",
        Bytes,
        "address-space limit (ulimit -v); i64::MAX when unlimited",
        "地址空间上限（ulimit -v）；不限制时为 i64::MAX"
    ),
    spec!(
        "version.accelerate",
        Text,
        "accelerate version (pip)",
        "accelerate 版本（pip）"
    ),
    spec!(
        "version.cuda_driver",
        Text,
        "highest CUDA version the driver supports (nvidia-smi `CUDA Version`)",
        "驱动支持的最高 CUDA 版本（nvidia-smi 的 `CUDA Version`）"
    ),
    spec!(
        "version.cuda_runtime",
        Text,
        "CUDA runtime version (collect_env, nvidia-cuda-runtime wheel)",
        "CUDA runtime 版本（collect_env、nvidia-cuda-runtime wheel）"
    ),
    spec!(
        "version.cuda_toolkit",
        Text,
        "nvcc version (ds_report)",
        "nvcc 版本（ds_report）"
    ),
    spec!(
        "version.deepspeed",
        Text,
        "DeepSpeed version",
        "DeepSpeed 版本"
    ),
    spec!(
        "version.driver",
        Text,
        "NVIDIA driver version",
        "NVIDIA 驱动版本"
    ),
    spec!(
        "version.flash_attn",
        Text,
        "flash-attn version (pip)",
        "flash-attn 版本（pip）"
    ),
    spec!(
        "version.nccl",
        Text,
        "NCCL version (nvidia-nccl wheel, NCCL INFO banner)",
        "NCCL 版本（nvidia-nccl wheel、NCCL INFO 启动信息）"
    ),
    spec!(
        "version.python",
        Text,
        "Python version (collect_env)",
        "Python 版本（collect_env）"
    ),
    spec!("version.torch", Text, "PyTorch version", "PyTorch 版本"),
    spec!(
        "version.torch_cuda",
        Text,
        "CUDA version PyTorch was built with",
        "PyTorch 编译时使用的 CUDA 版本"
    ),
    spec!(
        "version.transformers",
        Text,
        "transformers version (pip)",
        "transformers 版本（pip）"
    ),
    spec!(
        "version.triton",
        Text,
        "Triton version (pip)",
        "Triton 版本（pip）"
    ),
    spec!(
        "xid.<code>",
        Count,
        "NVIDIA Xid events with this code in the kernel log",
        "内核日志中该编号的 NVIDIA Xid 事件数"
    ),
];

/// Does a catalog pattern (`rank.<n>.exit_signal`) match a concrete name (`rank.3.exit_signal`)?
/// A pattern may also be matched by another pattern with the same shape (`rank.*.exit_signal`)
/// so that rule conditions can quantify over ranks.
pub fn pattern_matches(pattern: &str, name: &str) -> bool {
    let mut p = pattern.split('.');
    let mut n = name.split('.');
    loop {
        match (p.next(), n.next()) {
            (None, None) => return true,
            (Some(ps), Some(ns)) => {
                let wild_p = ps == "*" || (ps.starts_with('<') && ps.ends_with('>'));
                let wild_n = ns == "*" || (ns.starts_with('<') && ns.ends_with('>'));
                if !(wild_p || wild_n || ps == ns) {
                    return false;
                }
            }
            _ => return false,
        }
    }
}

/// The catalog entry for a name, if any.
pub fn spec_for(name: &str) -> Option<&'static FactSpec> {
    CATALOG.iter().find(|s| pattern_matches(s.name, name))
}

/// All facts of one analysis, in the order they were found, with lookups by name.
#[derive(Debug, Default, Clone)]
pub struct FactSet {
    facts: Vec<Fact>,
    by_name: BTreeMap<String, Vec<usize>>,
}

impl FactSet {
    pub fn new() -> FactSet {
        FactSet::default()
    }

    pub fn push(&mut self, fact: Fact) {
        // The same snapshot is often captured twice (before/after) or the same line read
        // by two parsers: keep one copy of an identical (name, value, path, line).
        if let Some(ix) = self.by_name.get(&fact.name)
            && ix.iter().any(|&i| {
                let f = &self.facts[i];
                f.value == fact.value && f.path == fact.path && f.line == fact.line
            })
        {
            return;
        }
        self.by_name
            .entry(fact.name.clone())
            .or_default()
            .push(self.facts.len());
        self.facts.push(fact);
    }

    pub fn all(&self) -> &[Fact] {
        &self.facts
    }

    pub fn is_empty(&self) -> bool {
        self.facts.is_empty()
    }

    /// Every current fact whose name matches `pattern` (which may contain `*` segments).
    /// When a name was read both before and after the run (`snapshot_before/…`,
    /// `snapshot_after/…`), only the later values count: they describe the failure.
    pub fn matching<'a>(&'a self, pattern: &'a str) -> impl Iterator<Item = &'a Fact> + 'a {
        let exact = !pattern.contains('*') && !pattern.contains('<');
        let names: Vec<&Vec<usize>> = if exact {
            self.by_name.get(pattern).into_iter().collect()
        } else {
            self.by_name
                .iter()
                .filter(|(n, _)| pattern_matches(pattern, n))
                .map(|(_, v)| v)
                .collect()
        };
        let mut out = Vec::new();
        for ix in names {
            let has_after = ix.iter().any(|&i| self.facts[i].phase != Phase::Before);
            out.extend(
                ix.iter()
                    .copied()
                    .filter(|&i| !has_after || self.facts[i].phase != Phase::Before),
            );
        }
        out.into_iter().map(move |i| &self.facts[i])
    }

    /// The most telling value of a fact: for snapshots taken before and after a run, the
    /// later one (not-before files win, then the last one read).
    pub fn get(&self, name: &str) -> Option<&Fact> {
        let ix = self.by_name.get(name)?;
        ix.iter()
            .rev()
            .map(|&i| &self.facts[i])
            .find(|f| f.phase != Phase::Before)
            .or_else(|| ix.last().map(|&i| &self.facts[i]))
    }

    pub fn num(&self, name: &str) -> Option<f64> {
        self.get(name).and_then(|f| f.value.as_f64())
    }

    /// The largest numeric value among facts matching the pattern.
    pub fn max_num<'a>(&'a self, pattern: &'a str) -> Option<(f64, &'a Fact)> {
        self.matching(pattern)
            .filter_map(|f| f.value.as_f64().map(|v| (v, f)))
            .max_by(|a, b| a.0.total_cmp(&b.0))
    }

    pub fn text(&self, name: &str) -> Option<&str> {
        self.get(name).and_then(|f| match &f.value {
            FactValue::Text(s) => Some(s.as_str()),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_is_sorted_and_unique() {
        for w in CATALOG.windows(2) {
            assert!(w[0].name < w[1].name, "{} !< {}", w[0].name, w[1].name);
        }
    }

    #[test]
    fn every_fact_is_described_in_chinese_with_the_same_names() {
        let mut bad = Vec::new();
        for spec in CATALOG {
            for f in crate::model::chinese_twin_faults(spec.doc.en, spec.doc.zh) {
                bad.push(format!("{}: {f}", spec.name));
            }
        }
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }

    #[test]
    fn wildcard_segments_match_one_segment() {
        assert!(pattern_matches(
            "rank.<n>.exit_signal",
            "rank.3.exit_signal"
        ));
        assert!(pattern_matches(
            "rank.<n>.exit_signal",
            "rank.*.exit_signal"
        ));
        assert!(!pattern_matches("rank.<n>.exit_signal", "rank.3.exit_code"));
        assert!(!pattern_matches("shm.size_bytes", "shm.size_bytes.x"));
    }

    #[test]
    fn identical_facts_are_kept_once() {
        let mut s = FactSet::new();
        let mut f = Fact::new("shm.size_bytes", 64i64);
        f.path = "a".into();
        s.push(f.clone());
        s.push(f);
        assert_eq!(s.all().len(), 1);
    }
}
