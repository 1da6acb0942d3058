//! firstfit-rust: a Drover scheduler plugin written in Rust with std only,
//! from docs/abi.md. It places the missing allocations of each task group
//! on the first ready, eligible node (by ID) of the job's datacenters and
//! node pool with enough free CPU, memory and disk, stops allocations past
//! a group's count or of a stopped or deleted job, and keeps its wholly
//! committed plans (ABI 1.3: kept plans and job statuses).
//!
//! Build: rustc --edition 2021 --target wasm32-wasi --crate-type cdylib -O \
//!          -C strip=debuginfo -o firstfit-rust.wasm lib.rs

mod msgpack;

use msgpack::{decode, Encoder, Value};
use std::collections::BTreeMap;

const ABI_VERSION: u32 = 1 << 16 | 3;
const HOST_DEFERS_UPDATES: u32 = 1 << 16 | 4;
const NAME: &str = "firstfit-rust";
const VERSION: &str = "0.1.0";

// Codes (docs/abi.md, section 6).
const CODE_OK: i64 = 0;
const CODE_DECODE: i64 = 6;
const CODE_OUT_OF_SYNC: i64 = 10;

/// How many plans in a row may make no progress (Nomad's service limit).
const MAX_ATTEMPTS: u32 = 5;

#[link(wasm_import_module = "drover")]
extern "C" {
    fn submit_plan(ptr: *const u8, len: i32) -> i32;
    fn update_eval(ptr: *const u8, len: i32) -> i32;
    fn create_eval(ptr: *const u8, len: i32) -> i32;
    fn reblock_eval(ptr: *const u8, len: i32) -> i32;
    #[link_name = "log"]
    fn host_log(ptr: *const u8, len: i32) -> i32;
    fn take_result(ptr: *mut u8);
}

type HostOp = unsafe extern "C" fn(*const u8, i32) -> i32;

/// Calls a planner operation and returns its answer; Err(code) when the
/// host could not handle the call.
fn call(op: HostOp, msg: &[u8]) -> Result<Vec<u8>, i64> {
    let n = unsafe { op(msg.as_ptr(), msg.len() as i32) };
    if n < 0 {
        return Err(-(n as i64));
    }
    let mut out = vec![0u8; n as usize];
    if n > 0 {
        unsafe { take_result(out.as_mut_ptr()) };
    }
    Ok(out)
}

fn log(level: i64, msg: &str, attrs: &[&str]) {
    let mut e = Encoder::default();
    e.map(3).str("Level").int(level).str("Message").str(msg).str("Attrs").array(attrs.len());
    for a in attrs {
        e.str(a);
    }
    let _ = call(host_log, &e.buf);
}

/// What the scheduler uses of a node.
struct Node {
    name: String,
    datacenter: String,
    pool: String,
    ready: bool,
    capacity: Usage,
}

#[derive(Clone, Copy, Default, Debug, PartialEq)]
struct Usage {
    cpu: i64,
    mem: i64,
    disk: i64,
}

impl Usage {
    fn add(&mut self, o: Usage) {
        self.cpu += o.cpu;
        self.mem += o.mem;
        self.disk += o.disk;
    }
    fn sub(&mut self, o: Usage) {
        self.cpu -= o.cpu;
        self.mem -= o.mem;
        self.disk -= o.disk;
    }
    fn fits_in(&self, free: Usage) -> bool {
        self.cpu <= free.cpu && self.mem <= free.mem && self.disk <= free.disk
    }
}

struct Task {
    name: String,
    cpu: i64,
    mem: i64,
    mem_max: i64,
}

struct Group {
    name: String,
    count: i64,
    tasks: Vec<Task>,
    disk: i64,
    cores: i64,
    // ports: the group or one of its tasks asks for a port, which this
    // plugin does not hand out (the host refuses a placement without it).
    ports: bool,
    // devices: one of its tasks asks for a device (a GPU, say), which this
    // plugin does not hand out either (the host refuses a placement
    // without it).
    devices: bool,
}

impl Group {
    fn usage(&self) -> Usage {
        let mut u = Usage { disk: self.disk, ..Usage::default() };
        for t in &self.tasks {
            u.cpu += t.cpu;
            u.mem += t.mem;
        }
        u
    }
}

struct Job {
    version: u64,
    job_modify_index: u64,
    priority: i64,
    stop: bool,
    datacenters: Vec<String>,
    pool: String,
    groups: Vec<Group>,
}

#[derive(Clone)]
struct Alloc {
    namespace: String,
    job_id: String,
    node: String,
    group: String,
    name: String,
    terminal: bool,
    usage: Usage,
}

/// The plugin's state mirror (docs/abi.md, section 1).
#[derive(Default)]
struct Mirror {
    index: u64,
    nodes: BTreeMap<String, Node>,
    jobs: BTreeMap<(String, String), Job>,
    allocs: BTreeMap<String, Alloc>,
    /// Per-node resources of non-terminal allocations.
    used: BTreeMap<String, Usage>,
    /// The new allocations of the last wholly committed plan, as sent,
    /// with the job version they were placed with (ABI 1.2).
    kept: Option<Vec<(String, Alloc)>>,
}

struct OutOfSync(String);

fn parse_node(v: &Value) -> Node {
    let r = v.get("NodeResources");
    let res = v.get("ReservedResources");
    let capacity = Usage {
        cpu: r.get("Cpu").get("CpuShares").i64() - res.get("Cpu").get("CpuShares").i64(),
        mem: r.get("Memory").get("MemoryMB").i64() - res.get("Memory").get("MemoryMB").i64(),
        disk: r.get("Disk").get("DiskMB").i64() - res.get("Disk").get("DiskMB").i64(),
    };
    let pool = match v.get("NodePool").str() {
        "" => "default",
        p => p,
    };
    Node {
        name: v.get("Name").str().to_string(),
        datacenter: v.get("Datacenter").str().to_string(),
        pool: pool.to_string(),
        ready: v.get("Status").str() == "ready"
            && v.get("SchedulingEligibility").str() != "ineligible"
            && v.get("DrainStrategy").is_nil(),
        capacity,
    }
}

fn parse_job(v: &Value) -> Job {
    let groups = v
        .get("TaskGroups")
        .array()
        .iter()
        .map(|g| {
            let mut cores = 0;
            let asks_ports = |nets: &Value| {
                nets.array()
                    .iter()
                    .any(|n| !n.get("ReservedPorts").array().is_empty() || !n.get("DynamicPorts").array().is_empty())
            };
            let mut ports = asks_ports(g.get("Networks"));
            let mut devices = false;
            let tasks = g
                .get("Tasks")
                .array()
                .iter()
                .map(|t| {
                    let r = t.get("Resources");
                    cores += r.get("Cores").i64();
                    ports |= asks_ports(r.get("Networks"));
                    devices |= !r.get("Devices").array().is_empty();
                    Task {
                        name: t.get("Name").str().to_string(),
                        cpu: r.get("CPU").i64(),
                        mem: r.get("MemoryMB").i64(),
                        mem_max: r.get("MemoryMaxMB").i64(),
                    }
                })
                .collect();
            Group {
                name: g.get("Name").str().to_string(),
                count: g.get("Count").i64(),
                tasks,
                disk: g.get("EphemeralDisk").get("SizeMB").i64(),
                cores,
                ports,
                devices,
            }
        })
        .collect();
    Job {
        version: v.get("Version").u64(),
        job_modify_index: v.get("JobModifyIndex").u64(),
        priority: v.get("Priority").i64(),
        stop: v.get("Stop").bool(),
        datacenters: v.get("Datacenters").array().iter().map(|d| d.str().to_string()).collect(),
        pool: v.get("NodePool").str().to_string(),
        groups,
    }
}

fn terminal(desired: &str, client: &str) -> bool {
    matches!(desired, "stop" | "evict") || matches!(client, "complete" | "failed" | "lost")
}

fn parse_alloc(v: &Value) -> Alloc {
    let mut usage = Usage { disk: v.get("AllocatedResources").get("Shared").get("DiskMB").i64(), ..Usage::default() };
    for (_, t) in v.get("AllocatedResources").get("Tasks").entries() {
        usage.cpu += t.get("Cpu").get("CpuShares").i64();
        usage.mem += t.get("Memory").get("MemoryMB").i64();
    }
    Alloc {
        namespace: v.get("Namespace").str().to_string(),
        job_id: v.get("JobID").str().to_string(),
        node: v.get("NodeID").str().to_string(),
        group: v.get("TaskGroup").str().to_string(),
        name: v.get("Name").str().to_string(),
        terminal: terminal(v.get("DesiredStatus").str(), v.get("ClientStatus").str()),
        usage,
    }
}

impl Mirror {
    fn remove_alloc(&mut self, id: &str) {
        if let Some(old) = self.allocs.remove(id) {
            if !old.terminal {
                self.used.entry(old.node.clone()).or_default().sub(old.usage);
            }
        }
    }

    fn put_alloc(&mut self, id: String, a: Alloc) {
        self.remove_alloc(&id);
        if !a.terminal {
            self.used.entry(a.node.clone()).or_default().add(a.usage);
        }
        self.allocs.insert(id, a);
    }

    /// Applies a StateSync, or changes nothing and says why it cannot.
    fn apply(&mut self, s: &Value) -> Result<(), OutOfSync> {
        let full = s.get("Full").bool();
        let kept = s.get("Kept");
        // Everything that makes a delta unusable is checked before any
        // change: a plugin out of sync changes nothing.
        if !full {
            let from = s.get("FromIndex").u64();
            if from != self.index {
                return Err(OutOfSync(format!("delta from {} to a mirror at {}", from, self.index)));
            }
            if !kept.is_nil() && self.kept.is_none() {
                return Err(OutOfSync("delta names a kept plan, but none is kept".to_string()));
            }
            for st in s.get("JobStatuses").array() {
                let key = (st.get("Namespace").str().to_string(), st.get("ID").str().to_string());
                match self.jobs.get(&key) {
                    Some(j) if j.job_modify_index == st.get("JobModifyIndex").u64() => {}
                    _ => return Err(OutOfSync(format!("job status of {}/{} at a specification not held", key.0, key.1))),
                }
            }
        }
        // Any sync consumes the kept plan: Kept adds it below, its absence
        // means forget it.
        let kept_plan = self.kept.take();
        if full {
            *self = Mirror::default();
        }
        // SchedulerConfig comes first in the order of application; this
        // scheduler reads none of it.
        for id in s.get("DeletedNodes").array() {
            self.nodes.remove(id.str());
        }
        for n in s.get("Nodes").array() {
            self.nodes.insert(n.get("ID").str().to_string(), parse_node(n));
        }
        for st in s.get("JobStatuses").array() {
            let key = (st.get("Namespace").str().to_string(), st.get("ID").str().to_string());
            if let Some(j) = self.jobs.get_mut(&key) {
                j.version = st.get("Version").u64();
            }
        }
        for id in s.get("DeletedJobs").array() {
            self.jobs.remove(&(id.get("Namespace").str().to_string(), id.get("ID").str().to_string()));
        }
        for j in s.get("Jobs").array() {
            self.jobs.insert((j.get("Namespace").str().to_string(), j.get("ID").str().to_string()), parse_job(j));
        }
        // JobVersions link allocations to older versions; this scheduler
        // reads only an allocation's own resources, so it needs none.
        if !full && !kept.is_nil() {
            for (id, a) in kept_plan.unwrap_or_default() {
                self.put_alloc(id, a);
            }
        }
        for id in s.get("DeletedAllocs").array() {
            self.remove_alloc(id.str());
        }
        for a in s.get("Allocs").array() {
            self.put_alloc(a.get("ID").str().to_string(), parse_alloc(a));
        }
        self.index = s.get("Index").u64();
        Ok(())
    }
}

/// A placement this pass decided.
struct Placement {
    id: String,
    node: String,
    node_name: String,
    group: usize,
    name: String,
}

/// One evaluation's work.
struct Pass<'a> {
    eval: &'a Value,
    seed: u64,
    ids: u64,
}

impl<'a> Pass<'a> {
    /// A new UUID (version 4 layout), derived from the eval's ID, the
    /// mirror's index and a counter, so that a replay yields the same IDs.
    fn new_id(&mut self, index: u64) -> String {
        self.ids += 1;
        let mut h = self.seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mut b = [0u8; 16];
        for (i, chunk) in b.chunks_mut(8).enumerate() {
            h = splitmix(h ^ self.ids.wrapping_add(i as u64));
            chunk.copy_from_slice(&h.to_le_bytes());
        }
        b[6] = b[6] & 0x0f | 0x40;
        b[8] = b[8] & 0x3f | 0x80;
        let mut s = String::with_capacity(36);
        for (i, x) in b.iter().enumerate() {
            if i == 4 || i == 6 || i == 8 || i == 10 {
                s.push('-');
            }
            s.push_str(&format!("{:02x}", x));
        }
        s
    }
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}

/// How an eval ended, for its update.
struct Outcome {
    status: &'static str,
    description: String,
    /// Allocations that found no node, to be placed by a blocked eval.
    unplaced: i64,
}

enum Failure {
    Code(i64, String),
    OutOfSync(String),
}

impl From<OutOfSync> for Failure {
    fn from(e: OutOfSync) -> Self {
        Failure::OutOfSync(e.0)
    }
}

fn alloc_name(job: &str, group: &str, idx: i64) -> String {
    format!("{}.{}[{}]", job, group, idx)
}

fn name_index(name: &str) -> Option<i64> {
    let open = name.rfind('[')?;
    name.strip_suffix(']')?[open + 1..].parse().ok()
}

/// Runs the eval: plans until the job's groups are placed (or no node has
/// room), retrying partly committed plans on the refreshed mirror.
fn schedule(m: &mut Mirror, pass: &mut Pass) -> Result<Outcome, Failure> {
    let ns = pass.eval.get("Namespace").str().to_string();
    let job_id = pass.eval.get("JobID").str().to_string();
    let mut stalled = 0;
    loop {
        let key = (ns.clone(), job_id.clone());
        let job = m.jobs.get(&key);
        let stopped = job.map_or(true, |j| j.stop);
        let mine: Vec<(&String, &Alloc)> =
            m.allocs.iter().filter(|(_, a)| !a.terminal && a.namespace == ns && a.job_id == job_id).collect();

        // Stops: every allocation of a stopped or gone job, and those of a
        // group past its count (highest index first) or gone from the job.
        let mut stops: Vec<(String, String)> = Vec::new(); // (node, id)
        let mut placements: Vec<Placement> = Vec::new();
        let mut unplaced = 0;
        let mut free: BTreeMap<&String, Usage> = BTreeMap::new();
        for (id, n) in &m.nodes {
            let mut f = n.capacity;
            f.sub(m.used.get(id).copied().unwrap_or_default());
            free.insert(id, f);
        }
        if stopped {
            for (id, a) in &mine {
                stops.push((a.node.clone(), id.to_string()));
            }
        } else {
            let job = job.unwrap();
            for (id, a) in &mine {
                if !job.groups.iter().any(|g| g.name == a.group) {
                    stops.push((a.node.clone(), id.to_string()));
                }
            }
            for (gi, g) in job.groups.iter().enumerate() {
                let mut live: Vec<(i64, &String, &Alloc)> = mine
                    .iter()
                    .filter(|(_, a)| a.group == g.name)
                    .map(|(id, a)| (name_index(&a.name).unwrap_or(i64::MAX), *id, *a))
                    .collect();
                live.sort_by(|x, y| x.0.cmp(&y.0).then(x.1.cmp(y.1)));
                while live.len() as i64 > g.count {
                    let (_, id, a) = live.pop().unwrap();
                    stops.push((a.node.clone(), id.clone()));
                }
                let missing = g.count - live.len() as i64;
                if missing <= 0 {
                    continue;
                }
                let used: Vec<i64> = live.iter().map(|l| l.0).collect();
                let mut next = 0;
                let need = g.usage();
                for _ in 0..missing {
                    while used.contains(&next) {
                        next += 1;
                    }
                    let idx = next;
                    next += 1;
                    let feasible = |(id, n): (&&String, &Usage)| -> bool {
                        let node = &m.nodes[*id];
                        node.ready
                            && (job.datacenters.is_empty() || job.datacenters.iter().any(|d| d == "*" || *d == node.datacenter))
                            && (job.pool == "all" || node.pool == if job.pool.is_empty() { "default" } else { &job.pool })
                            && need.fits_in(*n)
                    };
                    let chosen = if g.cores > 0 || g.ports || g.devices { None } else { free.iter().find(|e| feasible(*e)).map(|(id, _)| (*id).clone()) };
                    match chosen {
                        Some(node) => {
                            free.get_mut(&node).unwrap().sub(need);
                            let node_name = m.nodes[&node].name.clone();
                            placements.push(Placement { id: pass.new_id(m.index), node, node_name, group: gi, name: alloc_name(&job_id, &g.name, idx) });
                        }
                        None => unplaced += 1,
                    }
                }
            }
        }
        if stops.is_empty() && placements.is_empty() {
            let description = if unplaced > 0 { format!("{} allocation(s) found no node with room", unplaced) } else { String::new() };
            return Ok(Outcome { status: "complete", description, unplaced });
        }

        let plan = encode_plan(pass.eval.get("ID").str(), &ns, &job_id, job.filter(|_| !stopped), &stops, &placements);
        let answer = call(submit_plan, &plan).map_err(|c| Failure::Code(c, "submit_plan: host could not take the call".to_string()))?;
        let resp = decode(&answer).map_err(|e| Failure::Code(CODE_DECODE, format!("plan response: {}", e)))?;
        let code = resp.get("Code").i64();
        if code != CODE_OK {
            return Err(Failure::Code(code, format!("submit_plan: {}", resp.get("Message").str())));
        }
        if resp.get("Whole").bool() {
            // Kept until the next sync: the mirror stays at its index.
            let j = job.filter(|_| !stopped);
            let kept = placements
                .iter()
                .map(|p| {
                    let g = &j.unwrap().groups[p.group];
                    (p.id.clone(), Alloc { namespace: ns.clone(), job_id: job_id.clone(), node: p.node.clone(), group: g.name.clone(), name: p.name.clone(), terminal: false, usage: g.usage() })
                })
                .collect();
            m.kept = Some(kept);
            return Ok(Outcome { status: "complete", description: String::new(), unplaced });
        }
        let result = resp.get("Result");
        let refresh = resp.get("Refresh");
        if refresh.is_nil() {
            // Committed without a refresh: the next sync brings it.
            return Ok(Outcome { status: "complete", description: String::new(), unplaced });
        }
        let progressed = !result.get("NodeAllocation").entries().is_empty() || !result.get("NodeUpdate").entries().is_empty();
        log(4, "plan partly committed; retrying on the refreshed state", &["rejected_nodes", &result.get("RejectedNodes").array().len().to_string()]);
        m.apply(refresh)?;
        stalled = if progressed { 0 } else { stalled + 1 };
        if stalled >= MAX_ATTEMPTS {
            return Ok(Outcome { status: "failed", description: format!("{} plans in a row committed nothing", MAX_ATTEMPTS), unplaced: 0 });
        }
    }
}

fn encode_plan(eval_id: &str, ns: &str, job_id: &str, job: Option<&Job>, stops: &[(String, String)], places: &[Placement]) -> Vec<u8> {
    let mut e = Encoder::default();
    e.map(1).str("Plan").map(5);
    e.str("EvalID").str(eval_id);
    e.str("Job");
    match job {
        Some(j) => {
            e.map(4).str("Namespace").str(ns).str("ID").str(job_id).str("Version").uint(j.version);
            e.str("JobModifyIndex").uint(j.job_modify_index);
        }
        None => {
            e.nil();
        }
    }
    e.str("Priority").int(job.map_or(0, |j| j.priority));
    let mut by_node: BTreeMap<&str, Vec<&(String, String)>> = BTreeMap::new();
    for s in stops {
        by_node.entry(&s.0).or_default().push(s);
    }
    e.str("NodeUpdate").map(by_node.len());
    for (node, ss) in &by_node {
        e.str(node).array(ss.len());
        for (_, id) in ss.iter() {
            e.map(3).str("ID").str(id).str("NodeID").str(node).str("DesiredStatus").str("stop");
        }
    }
    let mut by_node: BTreeMap<&str, Vec<&Placement>> = BTreeMap::new();
    for p in places {
        by_node.entry(&p.node).or_default().push(p);
    }
    e.str("NodeAllocation").map(by_node.len());
    for (node, ps) in &by_node {
        e.str(node).array(ps.len());
        for p in ps {
            let j = job.unwrap();
            let g = &j.groups[p.group];
            e.map(12);
            e.str("ID").str(&p.id).str("Namespace").str(ns).str("EvalID").str(eval_id);
            e.str("Name").str(&p.name).str("NodeID").str(node).str("NodeName").str(&p.node_name).str("JobID").str(job_id);
            e.str("JobVersion").uint(j.version).str("JobModifyIndex").uint(j.job_modify_index);
            e.str("TaskGroup").str(&g.name);
            e.str("AllocatedResources").map(2).str("Tasks").map(g.tasks.len());
            for t in &g.tasks {
                e.str(&t.name).map(2);
                e.str("Cpu").map(1).str("CpuShares").int(t.cpu);
                e.str("Memory").map(2).str("MemoryMB").int(t.mem).str("MemoryMaxMB").int(t.mem_max);
            }
            e.str("Shared").map(1).str("DiskMB").int(g.disk);
            e.str("DesiredStatus").str("run");
        }
    }
    e.buf
}

/// The instance's state: the mirror and the buffers the host reads.
#[derive(Default)]
struct Plugin {
    mirror: Mirror,
    request: Vec<u8>,
    response: Vec<u8>,
    info: Vec<u8>,
}

static mut PLUGIN: Option<Plugin> = None;

fn plugin() -> &'static mut Plugin {
    // Safety: a wasm instance runs one thread and the host never calls it
    // concurrently (docs/abi.md, section 1).
    unsafe { PLUGIN.get_or_insert_with(Plugin::default) }
}

fn pack(b: &[u8]) -> i64 {
    ((b.as_ptr() as u64) << 32 | b.len() as u64) as i64
}

#[no_mangle]
pub extern "C" fn drover_abi_version() -> i32 {
    ABI_VERSION as i32
}

#[no_mangle]
pub extern "C" fn drover_info() -> i64 {
    let p = plugin();
    let mut e = Encoder::default();
    e.map(5).str("Name").str(NAME).str("Types").array(0).str("PluginVersion").str(VERSION);
    e.str("ABI").uint(ABI_VERSION as u64).str("MirrorEvals").bool(false);
    p.info = e.buf;
    pack(&p.info)
}

#[no_mangle]
pub extern "C" fn drover_buffer(size: i32) -> i32 {
    let p = plugin();
    p.request.resize(size.max(0) as usize, 0);
    p.request.as_mut_ptr() as i32
}

#[no_mangle]
pub extern "C" fn drover_process(size: i32) -> i64 {
    let p = plugin();
    let (code, message, update) = process(&mut p.mirror, &p.request[..size.max(0) as usize]);
    let mut e = Encoder::default();
    e.map(if update.is_some() { 4 } else { 3 });
    e.str("Code").int(code).str("Message").str(&message).str("Index").uint(p.mirror.index);
    if let Some(u) = update {
        e.str("UpdateEval").value(&u);
    }
    p.response = e.buf;
    pack(&p.response)
}

/// Processes one ProcessRequest: the code, message and deferred eval update
/// of the response.
fn process(m: &mut Mirror, req: &[u8]) -> (i64, String, Option<Value>) {
    let req = match decode(req) {
        Ok(r) => r,
        Err(e) => return (CODE_DECODE, format!("{}: request: {}", NAME, e), None),
    };
    if let Err(OutOfSync(why)) = m.apply(req.get("Sync")) {
        return (CODE_OUT_OF_SYNC, format!("{}: {}", NAME, why), None);
    }
    let eval = req.get("Eval");
    let mut pass = Pass { eval, seed: fnv(eval.get("ID").str()), ids: 0 };
    let outcome = match schedule(m, &mut pass) {
        Ok(o) => o,
        Err(Failure::OutOfSync(why)) => {
            // A refresh that does not apply: start over from a full sync.
            *m = Mirror::default();
            return (CODE_OUT_OF_SYNC, format!("{}: refresh: {}", NAME, why), None);
        }
        Err(Failure::Code(code, msg)) => return (code, format!("{}: {}", NAME, msg), None),
    };
    let blocked = eval.get("Status").str() == "blocked";
    let mut update = eval.with("Status", Value::Str(outcome.status.to_string()));
    update = update.with("StatusDescription", Value::Str(outcome.description.clone()));
    if outcome.unplaced > 0 {
        if blocked {
            // Still no room: back to the blocked tracker.
            let r = eval_op(reblock_eval, &eval.with("StatusDescription", Value::Str(outcome.description)));
            return match r {
                Ok(()) => (CODE_OK, String::new(), None),
                Err((c, msg)) => (c, format!("{}: reblock_eval: {}", NAME, msg), None),
            };
        }
        let id = pass.new_id(m.index);
        let b = Value::Map(vec![
            (Value::Str("ID".into()), Value::Str(id.clone())),
            (Value::Str("Namespace".into()), eval.get("Namespace").clone()),
            (Value::Str("Priority".into()), eval.get("Priority").clone()),
            (Value::Str("Type".into()), eval.get("Type").clone()),
            (Value::Str("TriggeredBy".into()), Value::Str("queued-allocs".into())),
            (Value::Str("JobID".into()), eval.get("JobID").clone()),
            (Value::Str("Status".into()), Value::Str("blocked".into())),
            (Value::Str("StatusDescription".into()), Value::Str("created to place remaining allocations".into())),
            (Value::Str("PreviousEval".into()), eval.get("ID").clone()),
            (Value::Str("EscapedComputedClass".into()), Value::Bool(true)),
        ]);
        if let Err((c, msg)) = eval_op(create_eval, &b) {
            return (c, format!("{}: create_eval: {}", NAME, msg), None);
        }
        update = update.with("BlockedEval", Value::Str(id));
    }
    if req.get("HostABI").u64() >= HOST_DEFERS_UPDATES as u64 {
        return (CODE_OK, String::new(), Some(update));
    }
    match eval_op(update_eval, &update) {
        Ok(()) => (CODE_OK, String::new(), None),
        Err((c, msg)) => (c, format!("{}: update_eval: {}", NAME, msg), None),
    }
}

/// Calls an eval operation (EvalRequest -> Status).
fn eval_op(op: HostOp, eval: &Value) -> Result<(), (i64, String)> {
    let mut e = Encoder::default();
    e.map(1).str("Eval").value(eval);
    let answer = call(op, &e.buf).map_err(|c| (c, "host could not take the call".to_string()))?;
    let st = decode(&answer).map_err(|err| (CODE_DECODE, err))?;
    match st.get("Code").i64() {
        CODE_OK => Ok(()),
        c => Err((c, st.get("Message").str().to_string())),
    }
}

