//! Run logs: written while a run executes, paged by `/log`, removed after the retention period.
//!
//! A run's log lives in its day directory `LOGDIR/yyyy-MM-dd/` (the local date of the trigger
//! time). By default every run has a file of its own, `RUNID.log` — XXL-JOB's layout, the one
//! operators look for. With packing switched on ([`crate::ExecutorBuilder::pack_run_logs`]) a
//! run that finished in one go with a log of at most [`PACK_LIMIT`] bytes is instead a record
//! in `packed/<RUNID / 1000>.log`: a header line `#chime-run <RUNID> <LENGTH>` and then exactly
//! LENGTH bytes of log, the same bytes the run's own file would hold (plus a newline if they do
//! not end in one, so that every header starts a line). Runs whose log went live (the handler
//! waited, so `/log` pages the log while it grows, or asked for the file's path) and larger
//! logs keep their own file either way.
//!
//! Packing is opt-in because it trades the one greppable file per run for throughput: creating
//! a file is the dominant cost of a short run, and on ext4 one file per no-op run cost the
//! executor 54–789 µs of CPU (almost all kernel time: inode allocation, directory index insert;
//! slowest after mass deletions). A bucket of 1,000 consecutive run ids is one file — log ids
//! from an admin are roughly sequential, so about one file creation per 1,000 runs — and a
//! reader finds a record by walking at most 1,000 headers, seeking over the bodies, with no
//! index to keep in memory. A record torn by a crash can only be a bucket's last: readers stop
//! at it, and the writer cuts it off before it appends to that bucket again.
//!
//! Readers do not depend on the setting: `/log` reads a run's own file if there is one, else
//! its packed record, so logs written before a restart with the other setting stay readable.
//! Retention removes buckets with their day directory. Lines are never fsync'd: a run log is
//! for people watching, and a crash of the machine that loses its last lines loses nothing the
//! admin depends on — results travel through the callback spool, which is durable.
//!
//! Files are created and written by one dedicated thread, the [`LogWriter`]. Creating a small
//! file on ext4 costs tens of microseconds of kernel time (inode and directory entry, journal)
//! and serialises on the day directory's lock; done on the runtime's worker threads it stalls
//! `/run` handling and makes the workers contend for that lock. The writer takes the work off
//! them, in arrival order, so a log's lines never reorder. `/log` first waits until the writer
//! has written everything handed to it so far ([`LogWriter::flush`]), so it never misses a
//! line that a handler already logged.

use chime_protocol::messages::LOG_FILE_NOT_EXISTS;
use chime_protocol::LogResult;
use chrono::{Local, NaiveDate, TimeZone};
use std::collections::{HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};

/// The day directory name (`yyyy-MM-dd`, executor's local time) of a trigger time.
pub fn day_dir_name(log_date_time: i64) -> String {
    match Local.timestamp_millis_opt(log_date_time) {
        chrono::LocalResult::Single(t) | chrono::LocalResult::Ambiguous(t, _) => t.format("%Y-%m-%d").to_string(),
        chrono::LocalResult::None => "1970-01-01".to_owned(),
    }
}

/// The path of a run's own log file: `<log_dir>/<yyyy-MM-dd>/<log_id>.log` (XXL-JOB's layout).
///
/// Every run has this file unless packing is on
/// ([`crate::ExecutorBuilder::pack_run_logs`]): then a run that finished in one go with a
/// small log is a record in `<log_dir>/<yyyy-MM-dd>/packed/<log_id / 1000>.log` instead (see
/// docs/executor.md, "Run logs"). `/log` reads either form from this path.
pub fn run_log_path(log_dir: &Path, log_date_time: i64, log_id: i64) -> PathBuf {
    let mut path = log_dir.join(day_dir_name(log_date_time));
    path.push(format!("{log_id}.log"));
    path
}

/// The largest log that is packed (when packing is on); a larger one gets its own file. Far above what a short run
/// logs (the two marker lines are about 200 bytes), and small enough that reading a run's
/// record never costs much.
pub const PACK_LIMIT: usize = 16 * 1024;

/// Run ids per packed bucket file: with sequential ids, one file creation per 1,000 runs.
const IDS_PER_BUCKET: i64 = 1000;

/// Packed bucket files the writer keeps open at most. Run ids from one admin move forward, so
/// one or two are in use at a time; the rest is room for several admins' id ranges.
const MAX_OPEN_BUCKETS: usize = 32;

/// The longest header line a reader accepts (`#chime-run ` and two decimal numbers fit in 52
/// bytes): anything longer is not a header, and is not read into memory as one.
const MAX_HEADER: u64 = 64;

/// The bucket a run's log is packed into, and the run's id, from the path of its own file.
fn bucket_of(run_log: &Path) -> Option<(PathBuf, i64)> {
    let log_id: i64 = run_log.file_stem()?.to_str()?.parse().ok()?;
    let mut bucket = run_log.parent()?.join("packed");
    bucket.push(format!("{}.log", log_id.div_euclid(IDS_PER_BUCKET)));
    Some((bucket, log_id))
}

/// A run's log as one record: header, body, and a newline after a body that lacks one, so
/// that the next header starts a line of its own (for `grep` and people reading the file).
fn packed_record(log_id: i64, body: &[u8]) -> Vec<u8> {
    let mut record = format!("#chime-run {log_id} {}\n", body.len()).into_bytes();
    record.reserve(body.len() + 1);
    record.extend_from_slice(body);
    if body.last() != Some(&b'\n') {
        record.push(b'\n');
    }
    record
}

fn parse_header(line: &[u8]) -> Option<(i64, u64)> {
    let line = std::str::from_utf8(line).ok()?;
    let mut parts = line.strip_prefix("#chime-run ")?.split(' ');
    let id = parts.next()?.parse().ok()?;
    let len = parts.next()?.parse().ok()?;
    parts.next().is_none().then_some((id, len))
}

/// Where one packed record's body is in its bucket file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Record {
    log_id: i64,
    offset: u64,
    len: u64,
}

/// Walks the whole records at the start of a bucket of `size` bytes, header to header, seeking
/// over the bodies. Returns them and the length of that well-formed prefix: whatever follows
/// is a record torn by a crash (or not a record at all), and is never attributed to a run.
fn scan_records<R: io::Read + io::Seek>(bucket: &mut io::BufReader<R>, size: u64) -> io::Result<(Vec<Record>, u64)> {
    use io::{BufRead, Read};
    let mut records = Vec::new();
    let mut at = 0;
    let mut line = Vec::with_capacity(MAX_HEADER as usize);
    while at < size {
        line.clear();
        bucket.by_ref().take(MAX_HEADER).read_until(b'\n', &mut line)?;
        let Some((log_id, len)) = line.strip_suffix(b"\n").and_then(parse_header) else {
            break;
        };
        let offset = at + line.len() as u64;
        let Some(end) = offset.checked_add(len).filter(|end| *end <= size) else {
            break;
        };
        records.push(Record { log_id, offset, len });
        at = end;
        // Relative, so that short records are read from the reader's buffer, not re-read.
        bucket.seek_relative(i64::try_from(len).map_err(io::Error::other)?)?;
        // The newline written after a body without one (a header never starts with one).
        if at < size && bucket.fill_buf()?.first() == Some(&b'\n') {
            bucket.consume(1);
            at += 1;
        }
    }
    Ok((records, at))
}

/// The log of run `log_id` packed in `bucket`: its record's body, or the bodies of all its
/// records in order should the same run id have been packed more than once (a run's own file
/// would then hold them one after the other, too). `None` when the bucket has no such record.
fn read_packed(bucket: &Path, log_id: i64) -> io::Result<Option<Vec<u8>>> {
    use io::{Read, Seek};
    let file = File::open(bucket)?;
    let size = file.metadata()?.len();
    let mut reader = io::BufReader::new(file);
    let (records, _) = scan_records(&mut reader, size)?;
    let mut log: Option<Vec<u8>> = None;
    for record in records.iter().filter(|r| r.log_id == log_id) {
        let log = log.get_or_insert_with(Vec::new);
        let start = log.len();
        log.resize(start + usize::try_from(record.len).map_err(io::Error::other)?, 0);
        reader.seek(io::SeekFrom::Start(record.offset))?;
        reader.read_exact(&mut log[start..])?;
    }
    Ok(log)
}

/// Reads a run's log: its own file, or else its packed record. `None` when it has neither.
pub(crate) fn read_log(path: &Path) -> Option<Vec<u8>> {
    match fs::read(path) {
        Ok(bytes) => Some(bytes),
        Err(_) => {
            let (bucket, log_id) = bucket_of(path)?;
            read_packed(&bucket, log_id).ok().flatten()
        }
    }
}

/// Something to do once a log's last bytes are in its file: the runner reports the run's
/// result this way, so a result never reaches the admin before the run's log is complete.
pub(crate) type AfterClose = Box<dyn FnOnce() + Send>;

enum Op {
    /// Append `bytes` to log `key` (opening or creating its file first if needed); with
    /// `close`, close the file afterwards and run `after`.
    Write {
        key: u64,
        path: Arc<Path>,
        bytes: Vec<u8>,
        close: bool,
        after: Option<AfterClose>,
    },
    /// Answer once everything sent before is written.
    Flush(tokio::sync::oneshot::Sender<()>),
    /// Write what is queued, then stop.
    Stop,
}

/// The thread that creates and writes run log files (see the module documentation). Cheap to
/// clone; every clone feeds the same thread.
#[derive(Clone)]
pub(crate) struct LogWriter {
    tx: mpsc::Sender<Op>,
    thread: Arc<Mutex<Option<std::thread::JoinHandle<()>>>>,
    next_key: Arc<AtomicU64>,
    backlog: Arc<Backlog>,
}

/// Writes handed to the writer thread and not yet done. When the disk cannot keep up, `/run`
/// waits for room ([`LogWriter::room`]) instead of letting the queue — and memory — grow
/// without bound: the admin then sees triggers accepted at the pace logs can be written.
struct Backlog {
    pending: AtomicUsize,
    room: tokio::sync::Notify,
}

/// Most writes queued for the writer before `/run` waits: at the slowest rate measured for
/// small files on ext4 (about 7,000 per second on a busy machine) a trigger waits well under
/// a second, far from the admin's 3 s timeout; and queued runs take a few MiB at most.
const MAX_BACKLOG: usize = 4096;

impl LogWriter {
    /// Starts the writer thread. With `pack`, short runs' logs are packed into buckets
    /// instead of getting a file each (see the module documentation).
    pub(crate) fn start(pack: bool) -> io::Result<LogWriter> {
        let (tx, rx) = mpsc::channel();
        let backlog = Arc::new(Backlog {
            pending: AtomicUsize::new(0),
            room: tokio::sync::Notify::new(),
        });
        let thread = {
            let backlog = backlog.clone();
            std::thread::Builder::new()
                .name("chime-run-logs".into())
                .spawn(move || write_loop(rx, &backlog, pack))?
        };
        Ok(LogWriter {
            tx,
            thread: Arc::new(Mutex::new(Some(thread))),
            next_key: Arc::new(AtomicU64::new(0)),
            backlog,
        })
    }

    /// A buffered log for a run: `<log_dir>/<yyyy-MM-dd>/<log_id>.log`.
    pub(crate) fn open(&self, log_dir: &Path, log_date_time: i64, log_id: i64) -> RunLog {
        let path = run_log_path(log_dir, log_date_time, log_id);
        RunLog {
            inner: Arc::new(RunLogInner {
                path: Arc::from(path),
                key: self.next_key.fetch_add(1, Ordering::Relaxed),
                tx: self.tx.clone(),
                backlog: self.backlog.clone(),
                state: Mutex::new(LogState::Buffered(Vec::with_capacity(512))),
            }),
        }
    }

    /// Resolves when the writer's backlog is below [`MAX_BACKLOG`] (at once, normally).
    pub(crate) async fn room(&self) {
        let backlog = &self.backlog;
        while backlog.pending.load(Ordering::Acquire) > MAX_BACKLOG {
            let notified = backlog.room.notified();
            let mut notified = std::pin::pin!(notified);
            // Registered before the re-check, so the writer's wake-up cannot fall between.
            notified.as_mut().enable();
            if backlog.pending.load(Ordering::Acquire) <= MAX_BACKLOG {
                break;
            }
            notified.await;
        }
    }

    /// Resolves once every line handed to the writer before the call is in its file.
    pub(crate) async fn flush(&self) {
        let (done, wait) = tokio::sync::oneshot::channel();
        if self.tx.send(Op::Flush(done)).is_ok() {
            // An error means the writer is gone (shutdown): nothing more will be written.
            let _ = wait.await;
        }
    }

    /// Writes everything queued and stops the thread; later writes are dropped. Blocks until
    /// the thread is done, so call it off the runtime's workers.
    pub(crate) fn stop(&self) {
        let _ = self.tx.send(Op::Stop);
        let thread = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(thread) = thread {
            if thread.join().is_err() {
                tracing::error!("the run log writer panicked");
            }
        }
    }
}

fn write_loop(rx: mpsc::Receiver<Op>, backlog: &Backlog, pack: bool) {
    // Logs that went live and are still being written, by key.
    let mut open: HashMap<u64, File> = HashMap::new();
    // Logs whose file could not be written: reported once, then their lines are dropped.
    let mut failed: HashSet<u64> = HashSet::new();
    let mut buckets = OpenBuckets::default();
    while let Ok(op) = rx.recv() {
        if matches!(op, Op::Write { .. }) {
            // Every pass from above the limit down to it wakes the triggers waiting for room.
            if backlog.pending.fetch_sub(1, Ordering::AcqRel) == MAX_BACKLOG + 1 {
                backlog.room.notify_waiters();
            }
        }
        match op {
            Op::Write {
                key,
                path,
                bytes,
                close,
                after,
            } => {
                if !failed.contains(&key) {
                    let result = match open.get_mut(&key) {
                        Some(file) => file.write_all(&bytes),
                        None if bytes.is_empty() => Ok(()),
                        // A log complete in one piece and small: a record in its bucket.
                        // (Reports its own failures: one warning per failing bucket, not per run.)
                        None if pack && close && bytes.len() <= PACK_LIMIT => match bucket_of(&path) {
                            Some((bucket, log_id)) => {
                                buckets.append(&bucket, log_id, &bytes);
                                Ok(())
                            }
                            None => open_append(&path).and_then(|mut file| file.write_all(&bytes)),
                        },
                        None => open_append(&path).and_then(|mut file| {
                            file.write_all(&bytes)?;
                            if !close {
                                open.insert(key, file);
                            }
                            Ok(())
                        }),
                    };
                    if let Err(err) = result {
                        // Losing a log is better than losing the run: the run goes on.
                        tracing::warn!(path = %path.display(), error = %err, "cannot write run log");
                        open.remove(&key);
                        if !close {
                            failed.insert(key);
                        }
                    }
                }
                if close {
                    open.remove(&key);
                    failed.remove(&key);
                }
                if let Some(after) = after {
                    after();
                }
            }
            Op::Flush(done) => {
                let _ = done.send(());
            }
            Op::Stop => break,
        }
    }
    // Anything sent after the stop is not written, but a result waiting on it is still
    // handed on (later senders see the channel closed and hand theirs on themselves).
    for op in rx.try_iter() {
        if let Op::Write { after: Some(after), .. } = op {
            after();
        }
    }
}

/// The packed bucket files the writer has open, so consecutive runs append without an `open`.
#[derive(Default)]
struct OpenBuckets {
    /// Each open bucket with the tick of its last append, to close the least recently used.
    files: HashMap<PathBuf, (File, u64)>,
    tick: u64,
    /// The bucket that last failed: while the same bucket keeps failing (a full or read-only
    /// disk) it is reported once, not for every run, and the runs go on without logs.
    failing: Option<PathBuf>,
}

impl OpenBuckets {
    /// Appends one record. Header and body go in one `write` to a file opened for appending
    /// by this thread alone, so records never interleave and a crash tears only the last.
    fn append(&mut self, bucket: &Path, log_id: i64, bytes: &[u8]) {
        let record = packed_record(log_id, bytes);
        let result = self.open(bucket).and_then(|file| file.write_all(&record));
        match result {
            Ok(()) => {
                if self.failing.take().is_some() {
                    tracing::info!(path = %bucket.display(), "run logs are written again");
                }
            }
            Err(err) => {
                // Reopened (and a torn record cut off) on the next append.
                self.files.remove(bucket);
                if self.failing.as_deref() != Some(bucket) {
                    // Losing a log is better than losing the run: the run goes on.
                    tracing::warn!(path = %bucket.display(), error = %err,
                        "cannot write run logs; runs go on without them until this bucket can be written");
                    self.failing = Some(bucket.to_owned());
                }
            }
        }
    }

    fn open(&mut self, bucket: &Path) -> io::Result<&mut File> {
        self.tick += 1;
        let tick = self.tick;
        if !self.files.contains_key(bucket) {
            if self.files.len() >= MAX_OPEN_BUCKETS {
                let oldest = self
                    .files
                    .iter()
                    .min_by_key(|(_, (_, used))| *used)
                    .map(|(path, _)| path.clone());
                if let Some(oldest) = oldest {
                    self.files.remove(&oldest);
                }
            }
            let file = open_bucket(bucket)?;
            self.files.insert(bucket.to_owned(), (file, tick));
        }
        let (file, used) = self.files.get_mut(bucket).expect("inserted above");
        *used = tick;
        Ok(file)
    }
}

/// Opens (creating it and `packed/` if needed) a bucket for appending. A crash, or a write
/// that failed halfway (disk full), may have torn its last record: that is cut off first, or
/// every record appended after it would be unreadable. Safe because one executor owns a log
/// directory (its callback spool relies on that too) and only its writer thread writes here.
fn open_bucket(bucket: &Path) -> io::Result<File> {
    let open = || OpenOptions::new().read(true).append(true).create(true).open(bucket);
    let file = match open() {
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            if let Some(parent) = bucket.parent() {
                fs::create_dir_all(parent)?;
            }
            open()?
        }
        other => other?,
    };
    let size = file.metadata()?.len();
    if size > 0 {
        let (_, whole) = scan_records(&mut io::BufReader::new(&file), size)?;
        if whole < size {
            tracing::warn!(path = %bucket.display(), torn_bytes = size - whole, "cutting off a torn run log record");
            file.set_len(whole)?;
        }
    }
    Ok(file)
}

/// An open run log. Clones share one log; writes from several tasks (a handler and a script's
/// stdout and stderr copiers) interleave line by line, never inside a line.
///
/// A log starts *buffered*: lines collect in memory until [`RunLog::go_live`] (the runner calls
/// it as soon as the handler has to wait for something) or it is closed. A run that finishes
/// in one go — most runs — thus costs one message to the writer, which creates its file with
/// one `open` and one `write` (or, with packing on and a log within [`PACK_LIMIT`], appends it
/// as one record to its bucket); a long run's log is on disk in its own file from its first
/// wait on, for `/log` to page while it grows.
#[derive(Clone)]
pub struct RunLog {
    inner: Arc<RunLogInner>,
}

struct RunLogInner {
    path: Arc<Path>,
    /// Identifies this log to the writer (log ids can repeat across day directories).
    key: u64,
    tx: mpsc::Sender<Op>,
    backlog: Arc<Backlog>,
    state: Mutex<LogState>,
}

enum LogState {
    Buffered(Vec<u8>),
    /// Every line goes to the writer as it comes.
    Live,
    /// Closed: later writes (a handler's stray task) are dropped.
    Closed,
}

impl RunLog {
    /// The path of the run's own log file ([`run_log_path`]). The file exists once the log
    /// went live ([`RunLog::go_live`]) or was closed; with packing on, a log closed while
    /// buffered and small is packed instead and never gets this file. [`read_page`] reads the
    /// log from this path in either form.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Appends `<yyyy-MM-dd HH:mm:ss> <message>\n`.
    pub fn line(&self, message: &str) {
        let mut state = self.inner.state.lock().unwrap_or_else(|e| e.into_inner());
        match &mut *state {
            LogState::Buffered(buf) => push_line(buf, message),
            LogState::Live => {
                let mut bytes = Vec::with_capacity(message.len() + 24);
                push_line(&mut bytes, message);
                self.send(bytes, false, None);
            }
            LogState::Closed => {}
        }
    }

    /// Appends bytes as they are (a script's output).
    pub fn raw(&self, bytes: &[u8]) {
        let mut state = self.inner.state.lock().unwrap_or_else(|e| e.into_inner());
        match &mut *state {
            LogState::Buffered(buf) => buf.extend_from_slice(bytes),
            LogState::Live => self.send(bytes.to_vec(), false, None),
            LogState::Closed => {}
        }
    }

    /// Hands what was buffered to the writer, which creates the file (and its day directory),
    /// and every later line straight after it. An unwritable file is reported through
    /// `tracing` and the run proceeds without a log.
    pub fn go_live(&self) {
        let mut state = self.inner.state.lock().unwrap_or_else(|e| e.into_inner());
        if let LogState::Buffered(buf) = &mut *state {
            let bytes = std::mem::take(buf);
            *state = LogState::Live;
            self.send(bytes, false, None);
        }
    }

    /// Hands the last lines to the writer and closes the log; later writes are dropped, since
    /// the run is reported finished. `after` runs on the writer thread once the file is
    /// complete (or could not be written).
    pub(crate) fn close_then(&self, after: Option<AfterClose>) {
        let mut state = self.inner.state.lock().unwrap_or_else(|e| e.into_inner());
        let bytes = match std::mem::replace(&mut *state, LogState::Closed) {
            LogState::Buffered(buf) => buf,
            LogState::Live => Vec::new(),
            LogState::Closed => {
                drop(state);
                if let Some(after) = after {
                    after();
                }
                return;
            }
        };
        self.send(bytes, true, after);
    }

    fn send(&self, bytes: Vec<u8>, close: bool, after: Option<AfterClose>) {
        let op = Op::Write {
            key: self.inner.key,
            path: self.inner.path.clone(),
            bytes,
            close,
            after,
        };
        self.inner.backlog.pending.fetch_add(1, Ordering::AcqRel);
        // The writer stopped (shutdown finished): the lines are lost, but a result waiting on
        // them must still be reported.
        if let Err(mpsc::SendError(Op::Write { after: Some(after), .. })) = self.inner.tx.send(op) {
            after();
        }
    }
}

impl Drop for RunLogInner {
    fn drop(&mut self) {
        // A log dropped without `close` (its run's task was torn down) must not keep its file
        // open in the writer forever.
        if matches!(*self.state.get_mut().unwrap_or_else(|e| e.into_inner()), LogState::Live) {
            self.backlog.pending.fetch_add(1, Ordering::AcqRel);
            let _ = self.tx.send(Op::Write {
                key: self.key,
                path: self.path.clone(),
                bytes: Vec::new(),
                close: true,
                after: None,
            });
        }
    }
}

fn push_line(buf: &mut Vec<u8>, message: &str) {
    push_timestamp(buf);
    buf.extend_from_slice(message.as_bytes());
    buf.push(b'\n');
}

/// Appends the local time (`yyyy-MM-dd HH:mm:ss `), formatted once per second per thread:
/// time-zone conversion and formatting are the costliest part of writing a short line.
fn push_timestamp(out: &mut Vec<u8>) {
    use std::cell::RefCell;
    thread_local! {
        static CACHE: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
    }
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.0 != secs {
            *cache = (secs, Local::now().format("%Y-%m-%d %H:%M:%S ").to_string());
        }
        out.extend_from_slice(cache.1.as_bytes());
    });
}

fn open_append(path: &Path) -> io::Result<File> {
    let open = || OpenOptions::new().create(true).append(true).open(path);
    match open() {
        Ok(file) => Ok(file),
        // Creating the day directory only on a miss keeps the common case to one syscall.
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent)?;
            }
            open()
        }
        Err(err) => Err(err),
    }
}

/// Reads a run's log from line `from_line_num` (counting from 1) for `/log`. `path` is the
/// run's own file ([`run_log_path`]); without one, the run's record in its packed bucket is
/// read, with the same result the file would give, whatever the writer's setting is now.
/// "Not exists" means neither is there.
///
/// `finished` must be sampled *before* the file is read: a run that was finished then has all
/// its lines in the file, so `isEnd: true` is never sent with lines still missing. While the run
/// is active a trailing line without its newline is held back (it is still being written), so
/// `fromLineNum = toLineNum + 1` on the next poll never skips or repeats text. `active` tells
/// whether the run is known here (queued or running): such a run without a file yet gets an
/// empty, unfinished page instead of XXL-JOB's "not exists" error.
pub fn read_page(path: &Path, from_line_num: i32, finished: bool) -> LogResult {
    let from = from_line_num.max(1);
    let bytes = match read_log(path) {
        Some(bytes) => bytes,
        None if !finished => {
            return LogResult {
                from_line_num: from,
                to_line_num: 0,
                log_content: String::new(),
                is_end: false,
            }
        }
        None => {
            return LogResult {
                from_line_num: from,
                to_line_num: 0,
                log_content: LOG_FILE_NOT_EXISTS.to_owned(),
                is_end: true,
            }
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    let mut body: &str = &text;
    if !finished {
        // Hold back an unterminated last line: its writer is not done with it.
        match body.rfind('\n') {
            Some(pos) => body = &body[..=pos],
            None => body = "",
        }
    }
    let mut content = String::new();
    let mut line_no: i32 = 0;
    for line in body.lines() {
        line_no += 1;
        if line_no >= from {
            content.push_str(line);
            content.push('\n');
        }
    }
    // G2 semantics: toLineNum is the number of the file's last line, even when it is below
    // fromLineNum (nothing new yet).
    LogResult {
        from_line_num: from,
        to_line_num: line_no,
        log_content: content,
        is_end: finished,
    }
}

/// Removes day directories (`yyyy-MM-dd`) older than `retention_days` whole days, counted from
/// today's local midnight (XXL-JOB 2.4's rule). `retention_days < 1` keeps everything.
/// Returns the directories removed.
pub fn remove_old_day_dirs(log_dir: &Path, retention_days: i64) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    if retention_days < 1 {
        return removed;
    }
    let today = Local::now().date_naive();
    let Ok(entries) = fs::read_dir(log_dir) else {
        return removed;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Ok(date) = NaiveDate::parse_from_str(name, "%Y-%m-%d") else {
            continue;
        };
        if !entry.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            continue;
        }
        if (today - date).num_days() >= retention_days {
            let path = entry.path();
            match fs::remove_dir_all(&path) {
                Ok(()) => removed.push(path),
                Err(err) => tracing::warn!(path = %path.display(), error = %err, "cannot remove old run logs"),
            }
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run's log holding `text`, in a directory removed when the first is dropped.
    fn log_of(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("1.log");
        fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn pages_by_line_number_with_g2_semantics() {
        let (_dir, path) = log_of("a\nb\nc\n");
        let page = read_page(&path, 1, true);
        assert_eq!(
            (page.from_line_num, page.to_line_num, page.log_content.as_str()),
            (1, 3, "a\nb\nc\n")
        );
        assert!(page.is_end);
        let page = read_page(&path, 3, false);
        assert_eq!(
            (page.to_line_num, page.log_content.as_str(), page.is_end),
            (3, "c\n", false)
        );
        let page = read_page(&path, 4, false);
        assert_eq!((page.to_line_num, page.log_content.as_str()), (3, ""));
    }

    #[test]
    fn holds_back_a_partial_line_while_the_run_is_active() {
        let (_dir, path) = log_of("a\npart");
        let page = read_page(&path, 1, false);
        assert_eq!((page.to_line_num, page.log_content.as_str()), (1, "a\n"));
        let page = read_page(&path, 2, true);
        assert_eq!((page.to_line_num, page.log_content.as_str()), (2, "part\n"));
    }

    #[test]
    fn missing_file_is_reported_and_ends_polling_only_when_finished() {
        let dir = tempfile::tempdir().unwrap();
        let page = read_page(&dir.path().join("nope.log"), 1, true);
        assert_eq!(page.log_content, LOG_FILE_NOT_EXISTS);
        assert!(page.is_end);
        let page = read_page(&dir.path().join("nope.log"), 1, false);
        assert_eq!(page.log_content, "");
        assert!(!page.is_end);
    }

    #[test]
    fn retention_removes_only_old_day_directories() {
        let dir = tempfile::tempdir().unwrap();
        let today = Local::now().date_naive();
        let old = (today - chrono::Days::new(10)).format("%Y-%m-%d").to_string();
        let recent = (today - chrono::Days::new(1)).format("%Y-%m-%d").to_string();
        for name in [old.as_str(), recent.as_str(), "gluesource", "callback-spool"] {
            fs::create_dir(dir.path().join(name)).unwrap();
        }
        assert!(remove_old_day_dirs(dir.path(), 0).is_empty());
        let removed = remove_old_day_dirs(dir.path(), 5);
        assert_eq!(removed, vec![dir.path().join(&old)]);
        assert!(dir.path().join(&recent).exists());
        assert!(dir.path().join("gluesource").exists());
    }

    #[test]
    fn log_lines_land_in_the_day_directory() {
        let dir = tempfile::tempdir().unwrap();
        let writer = LogWriter::start(false).unwrap();
        let log = writer.open(dir.path(), 1_586_629_003_729, 42);
        log.line("hello");
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(writer.flush());
        assert!(!log.path().exists(), "buffered until live");
        log.go_live();
        log.raw(b"raw\n");
        runtime.block_on(writer.flush());
        let text = fs::read_to_string(log.path()).unwrap();
        assert!(
            text.ends_with(" hello\nraw\n"),
            "live lines are in the file after a flush: {text}"
        );
        let (done_tx, done_rx) = mpsc::channel();
        log.close_then(Some(Box::new(move || done_tx.send(()).unwrap())));
        log.raw(b"dropped\n");
        done_rx.recv().unwrap();
        writer.stop();
        let text = fs::read_to_string(run_log_path(dir.path(), 1_586_629_003_729, 42)).unwrap();
        assert!(text.ends_with(" hello\nraw\n"), "{text}");
        assert!(log.path().parent().unwrap().ends_with(day_dir_name(1_586_629_003_729)));
    }

    /// Runs a log through the writer: lines, then close, and waits until it is written.
    fn write_run(writer: &LogWriter, dir: &Path, log_id: i64, lines: &[&str]) -> PathBuf {
        let log = writer.open(dir, 1_586_629_003_729, log_id);
        for line in lines {
            log.line(line);
        }
        let (done_tx, done_rx) = mpsc::channel();
        log.close_then(Some(Box::new(move || done_tx.send(()).unwrap())));
        done_rx.recv().unwrap();
        log.path().to_owned()
    }

    fn page_text(path: &Path) -> String {
        let page = read_page(path, 1, true);
        assert!(page.is_end);
        page.log_content
    }

    #[test]
    fn by_default_every_run_gets_a_file_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let writer = LogWriter::start(false).unwrap();
        let paths: Vec<PathBuf> = (1..=3)
            .map(|id| write_run(&writer, dir.path(), id, &[&format!("run {id}")]))
            .collect();
        writer.stop();
        for (id, path) in (1..=3).zip(&paths) {
            assert_eq!(path, &run_log_path(dir.path(), 1_586_629_003_729, id));
            let text = fs::read_to_string(path).unwrap();
            assert!(text.ends_with(&format!(" run {id}\n")), "{text}");
            assert_eq!(page_text(path), text);
        }
        assert!(!paths[0].parent().unwrap().join("packed").exists());
    }

    #[test]
    fn logs_written_under_either_setting_are_read_under_the_other() {
        let dir = tempfile::tempdir().unwrap();
        // Packed, then a restart without packing, then with packing again: one day, one bucket.
        let packing = LogWriter::start(true).unwrap();
        let first = write_run(&packing, dir.path(), 1, &["packed"]);
        packing.stop();
        let own_files = LogWriter::start(false).unwrap();
        let second = write_run(&own_files, dir.path(), 2, &["own file"]);
        own_files.stop();
        let packing = LogWriter::start(true).unwrap();
        let third = write_run(&packing, dir.path(), 3, &["packed again"]);
        packing.stop();
        assert_eq!((first.exists(), second.exists(), third.exists()), (false, true, false));
        assert!(page_text(&first).ends_with(" packed\n"));
        assert!(page_text(&second).ends_with(" own file\n"));
        assert!(page_text(&third).ends_with(" packed again\n"));
    }

    #[test]
    fn short_runs_are_packed_and_read_back_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let writer = LogWriter::start(true).unwrap();
        // 2,500 runs over three buckets, interleaved, each with its own lines.
        let mut paths = Vec::new();
        for id in 0..2_500 {
            let text = format!("run {id}");
            paths.push(write_run(
                &writer,
                dir.path(),
                7_000 + id,
                &[&text, "#chime-run 1 1", "end"],
            ));
        }
        writer.stop();
        for (id, path) in (0..2_500).zip(&paths) {
            assert!(!path.exists(), "a short run gets no file of its own");
            let text = page_text(path);
            let lines: Vec<&str> = text.lines().map(|l| &l[20..]).collect();
            assert_eq!(
                lines,
                [format!("run {id}").as_str(), "#chime-run 1 1", "end"],
                "run {id}"
            );
        }
        let day = paths[0].parent().unwrap();
        let mut buckets: Vec<String> = fs::read_dir(day.join("packed"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        buckets.sort();
        assert_eq!(buckets, ["7.log", "8.log", "9.log"]);
        assert_eq!(
            page_text(&day.join("9600.log")),
            LOG_FILE_NOT_EXISTS,
            "a run never logged"
        );
    }

    #[test]
    fn a_log_above_the_limit_gets_its_own_file() {
        let dir = tempfile::tempdir().unwrap();
        let writer = LogWriter::start(true).unwrap();
        let long = "x".repeat(PACK_LIMIT);
        let path = write_run(&writer, dir.path(), 5, &[&long]);
        writer.stop();
        assert!(path.exists());
        assert!(page_text(&path).ends_with(&format!(" {long}\n")));
        assert!(!path.parent().unwrap().join("packed").exists());
    }

    #[test]
    fn a_torn_record_is_cut_off_and_later_records_stay_readable() {
        // A crash mid-append: in the body, in the header line, right after the header.
        for torn in [
            "#chime-run 2 10\ntwo",
            "#chime-ru",
            "#chime-run 2 1",
            "#chime-run 2 3\n",
        ] {
            let dir = tempfile::tempdir().unwrap();
            let day = dir.path().join(day_dir_name(1_586_629_003_729));
            fs::create_dir_all(day.join("packed")).unwrap();
            // One whole record for run 1, then run 2's record, torn.
            let bucket = day.join("packed").join("0.log");
            fs::write(&bucket, format!("#chime-run 1 4\none\n{torn}")).unwrap();
            assert_eq!(page_text(&day.join("1.log")), "one\n", "{torn:?}");
            assert_eq!(page_text(&day.join("2.log")), LOG_FILE_NOT_EXISTS, "{torn:?}");
            let writer = LogWriter::start(true).unwrap();
            write_run(&writer, dir.path(), 3, &["three"]);
            write_run(&writer, dir.path(), 2, &["two again"]);
            writer.stop();
            assert_eq!(page_text(&day.join("1.log")), "one\n");
            assert!(page_text(&day.join("3.log")).ends_with(" three\n"), "{torn:?}");
            assert!(page_text(&day.join("2.log")).ends_with(" two again\n"), "{torn:?}");
            let text = fs::read_to_string(&bucket).unwrap();
            assert_eq!(
                text.matches("#chime-run").count(),
                3,
                "the torn record was cut off: {text}"
            );
        }
    }

    /// Reads run `log_id` from a bucket file holding `bucket`.
    fn packed_in(bucket: &[u8], log_id: i64) -> Option<Vec<u8>> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.log");
        fs::write(&path, bucket).unwrap();
        read_packed(&path, log_id).unwrap()
    }

    #[test]
    fn headers_that_are_not_records_end_the_scan_without_panicking() {
        for bucket in [
            &b"#chime-run x 1\na"[..],
            b"#chime-run 1 99999999999999999999\n",
            b"#chime-run 1 18446744073709551615\nab",
            b"#chime-run 1 2 3\nab",
            b"#chime-run 1 2",
            b"#chime-ru",
            b"garbage",
            b"#chime-run 1 -1\n",
            b"\n#chime-run 1 1\na",
            b"",
        ] {
            assert_eq!(packed_in(bucket, 1), None, "{:?}", String::from_utf8_lossy(bucket));
        }
        // A header far longer than any real one is not read as one, whatever follows.
        let mut long = format!("#chime-run 1 1{}", " ".repeat(100)).into_bytes();
        long.extend_from_slice(b"\na");
        assert_eq!(packed_in(&long, 1), None);
        // Records after a broken one are never attributed, even if they look whole.
        assert_eq!(packed_in(b"#chime-run 2 1\nab\n#chime-run 1 1\nc", 1), None);
    }

    #[test]
    fn records_without_a_final_newline_and_repeated_run_ids_read_back_as_a_file_would() {
        let mut bucket = packed_record(1, b"one\npartial");
        bucket.extend(packed_record(2, b"two\n"));
        bucket.extend(packed_record(1, b"again\n"));
        bucket.extend(packed_record(3, b""));
        assert_eq!(
            String::from_utf8(bucket.clone()).unwrap(),
            "#chime-run 1 11\none\npartial\n#chime-run 2 4\ntwo\n#chime-run 1 6\nagain\n#chime-run 3 0\n\n",
            "every header starts a line"
        );
        // Run 1's own file would hold both runs' lines, one after the other.
        assert_eq!(packed_in(&bucket, 1).unwrap(), b"one\npartialagain\n");
        assert_eq!(packed_in(&bucket, 2).unwrap(), b"two\n");
        assert_eq!(packed_in(&bucket, 3).unwrap(), b"");
        assert_eq!(packed_in(&bucket, 4), None);
    }

    #[test]
    fn runs_in_more_buckets_than_stay_open_are_all_written() {
        let dir = tempfile::tempdir().unwrap();
        let writer = LogWriter::start(true).unwrap();
        // Ids cycling through 80 buckets: every append past the first 32 evicts one.
        let ids: Vec<i64> = (0..3)
            .flat_map(|round| (0..80).map(move |b| b * 1000 + round))
            .collect();
        let paths: Vec<PathBuf> = ids
            .iter()
            .map(|id| write_run(&writer, dir.path(), *id, &[&format!("run {id}")]))
            .collect();
        writer.stop();
        for (id, path) in ids.iter().zip(&paths) {
            assert!(page_text(path).ends_with(&format!(" run {id}\n")), "run {id}");
        }
        let day = paths[0].parent().unwrap();
        assert_eq!(fs::read_dir(day.join("packed")).unwrap().count(), 80);
    }

    #[test]
    fn retention_removes_packed_buckets_with_their_day() {
        let dir = tempfile::tempdir().unwrap();
        let writer = LogWriter::start(true).unwrap();
        let now = Local::now();
        let old = (now - chrono::Days::new(10)).timestamp_millis();
        let recent = now.timestamp_millis();
        let old_run = writer.open(dir.path(), old, 1);
        old_run.line("old");
        old_run.close_then(None);
        let new_run = writer.open(dir.path(), recent, 2);
        new_run.line("new");
        let (done_tx, done_rx) = mpsc::channel();
        new_run.close_then(Some(Box::new(move || done_tx.send(()).unwrap())));
        done_rx.recv().unwrap();
        writer.stop();
        let old_day = old_run.path().parent().unwrap().to_owned();
        assert!(old_day.join("packed").join("0.log").exists());
        assert_eq!(remove_old_day_dirs(dir.path(), 5), vec![old_day.clone()]);
        assert!(!old_day.exists());
        assert_eq!(page_text(old_run.path()), LOG_FILE_NOT_EXISTS);
        assert!(page_text(new_run.path()).ends_with(" new\n"));
    }
}
