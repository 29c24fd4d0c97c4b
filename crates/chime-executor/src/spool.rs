//! The callback spool: an append-only, fsync'd log of run results on disk, read back in order
//! by the sender until the admin has accepted each of them.
//!
//! Every result goes through the spool *before* it is sent (write-ahead), not only after a
//! failed send as in XXL-JOB: a result is safe the moment its batch's `fdatasync` returns, and
//! a crash at any later point — mid-send, between send and acknowledgement, during a retry —
//! leaves it on disk to be sent again after restart. The price is one fsync per batch (a batch
//! holds every result that finished while the previous fsync ran), not per result.
//!
//! Layout of `LOGDIR/callback-spool/`:
//!
//! - `00000000000000000007.jsonl` …: segments, one JSON callback item per line, in the exact
//!   wire form (`{"logId":…,"logDateTim":…,"handleCode":…,"handleMsg":…}`), so a batch body
//!   is just the lines joined with commas. A new segment starts at every process start and
//!   when the current one passes [`SEGMENT_MAX_BYTES`]; old segments are never appended to,
//!   so a torn last line (crash mid-write) can only be at the end of a segment, and is skipped.
//! - `cursor`: `"<segment> <offset>"`, how far the admin has acknowledged. Written by rename
//!   and deliberately *not* fsync'd: losing it (power loss) only re-sends acknowledged results,
//!   and admins treat repeated callbacks as idempotent. Segments wholly below the cursor are
//!   deleted.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// A segment is closed and a new one started past this size.
pub const SEGMENT_MAX_BYTES: u64 = 4 * 1024 * 1024;

/// A position in the spool: a segment number and a byte offset in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Pos {
    /// Segment number.
    pub seg: u64,
    /// Byte offset within the segment.
    pub off: u64,
}

fn segment_path(dir: &Path, seg: u64) -> PathBuf {
    dir.join(format!("{seg:020}.jsonl"))
}

fn list_segments(dir: &Path) -> io::Result<Vec<u64>> {
    let mut segs: Vec<u64> = fs::read_dir(dir)?
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let name = name.to_str()?;
            name.strip_suffix(".jsonl")?.parse().ok()
        })
        .collect();
    segs.sort_unstable();
    Ok(segs)
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Opens the spool directory: returns the writer (on a fresh segment) and the reader (at the
/// acknowledged cursor, or the oldest segment).
pub fn open(dir: &Path) -> io::Result<(SpoolWriter, SpoolReader)> {
    fs::create_dir_all(dir)?;
    let segs = list_segments(dir)?;
    let cursor = read_cursor(dir);
    let first = segs.first().copied();
    let start = match (cursor, first) {
        (Some(c), Some(first)) if c.seg >= first && segs.contains(&c.seg) => c,
        (_, Some(first)) => Pos { seg: first, off: 0 },
        (Some(c), None) => Pos { seg: c.seg + 1, off: 0 },
        (None, None) => Pos { seg: 1, off: 0 },
    };
    for &seg in segs.iter().filter(|&&s| s < start.seg) {
        let _ = fs::remove_file(segment_path(dir, seg));
    }
    let next = segs.last().map_or(start.seg, |last| (last + 1).max(start.seg));
    let writer = SpoolWriter::create(dir, next)?;
    let reader = SpoolReader {
        dir: dir.to_owned(),
        pos: start,
    };
    Ok((writer, reader))
}

fn read_cursor(dir: &Path) -> Option<Pos> {
    let text = fs::read_to_string(dir.join("cursor")).ok()?;
    let mut parts = text.split_whitespace();
    let seg = parts.next()?.parse().ok()?;
    let off = parts.next()?.parse().ok()?;
    Some(Pos { seg, off })
}

/// Appends batches of lines to the current segment, fsync'ing each batch.
pub struct SpoolWriter {
    dir: PathBuf,
    seg: u64,
    file: File,
    off: u64,
}

impl SpoolWriter {
    fn create(dir: &Path, seg: u64) -> io::Result<SpoolWriter> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(segment_path(dir, seg))?;
        let off = file.metadata()?.len();
        // The new file's directory entry must be durable too, or a crash could lose the file.
        sync_dir(dir)?;
        Ok(SpoolWriter {
            dir: dir.to_owned(),
            seg,
            file,
            off,
        })
    }

    /// Where the next batch will be written: everything before it is durable.
    pub fn end(&self) -> Pos {
        Pos {
            seg: self.seg,
            off: self.off,
        }
    }

    /// Appends `bytes` (whole lines) and returns once they are on disk.
    pub fn append(&mut self, bytes: &[u8]) -> io::Result<Pos> {
        if self.off >= SEGMENT_MAX_BYTES {
            *self = SpoolWriter::create(&self.dir, self.seg + 1)?;
        }
        if let Err(err) = self.file.write_all(bytes).and_then(|()| self.file.sync_data()) {
            // A partial write would leave a torn line mid-segment; start a fresh segment so
            // that torn lines stay at segment ends, where the reader expects them.
            if let Ok(next) = SpoolWriter::create(&self.dir, self.seg + 1) {
                *self = next;
            }
            return Err(err);
        }
        self.off += bytes.len() as u64;
        Ok(self.end())
    }
}

/// Reads unacknowledged lines in order and records acknowledgements.
pub struct SpoolReader {
    dir: PathBuf,
    pos: Pos,
}

/// Lines read from the spool, and the position just after them.
#[derive(Debug, Default)]
pub struct Batch {
    /// Complete lines, without their newline, each a valid JSON callback item.
    pub lines: Vec<String>,
    /// Where reading stopped: acknowledge this once the lines are accepted.
    pub end: Pos,
}

impl SpoolReader {
    /// The first unacknowledged position.
    pub fn pos(&self) -> Pos {
        self.pos
    }

    /// Reads up to `max` lines between the cursor and `durable` (the writer's end).
    #[cfg(test)]
    pub fn read_batch(&self, durable: Pos, max: usize) -> io::Result<Batch> {
        self.read_batch_within(durable, max, usize::MAX)
    }

    /// Reads up to `max` lines between the cursor and `durable`, and lines of at most
    /// `max_bytes` in all (each counted with one byte for its separator); the first line is
    /// taken whatever its size, so a batch always moves on.
    pub fn read_batch_within(&self, durable: Pos, max: usize, max_bytes: usize) -> io::Result<Batch> {
        let mut batch = Batch {
            lines: Vec::new(),
            end: self.pos,
        };
        let mut pos = self.pos;
        let mut bytes = 0usize;
        let mut full = false;
        while pos < durable && batch.lines.len() < max && !full {
            let limit = if pos.seg == durable.seg { durable.off } else { u64::MAX };
            let path = segment_path(&self.dir, pos.seg);
            let file = match File::open(&path) {
                Ok(f) => f,
                Err(err) if err.kind() == io::ErrorKind::NotFound => {
                    pos = Pos {
                        seg: pos.seg + 1,
                        off: 0,
                    };
                    batch.end = pos;
                    continue;
                }
                Err(err) => return Err(err),
            };
            let mut reader = BufReader::new(file);
            reader.seek(SeekFrom::Start(pos.off))?;
            let mut buf = Vec::new();
            let mut segment_done = false;
            while pos.off < limit && batch.lines.len() < max {
                buf.clear();
                let n = reader.read_until(b'\n', &mut buf)? as u64;
                if n == 0 || buf.last() != Some(&b'\n') {
                    // End of a sealed segment, or a torn last line from a crash mid-write.
                    segment_done = true;
                    break;
                }
                if !batch.lines.is_empty() && bytes.saturating_add(buf.len()) > max_bytes {
                    // Left for the next batch: not consumed.
                    full = true;
                    break;
                }
                bytes = bytes.saturating_add(buf.len());
                pos.off += n;
                let line = &buf[..buf.len() - 1];
                // A cheap well-formedness check (no allocation): the admin must never get a broken body.
                if serde_json::from_slice::<serde::de::IgnoredAny>(line).is_ok() {
                    batch.lines.push(String::from_utf8_lossy(line).into_owned());
                } else {
                    tracing::warn!(segment = pos.seg, "skipping a corrupt callback spool line");
                }
            }
            if segment_done {
                if pos.seg < durable.seg {
                    pos = Pos {
                        seg: pos.seg + 1,
                        off: 0,
                    };
                } else {
                    // The writer's segment ended before its durable end: cannot happen with
                    // one writer; stop rather than spin.
                    batch.end = pos;
                    break;
                }
            }
            batch.end = pos;
        }
        Ok(batch)
    }

    /// Records that everything before `end` was accepted: moves the cursor, deletes segments
    /// left behind.
    pub fn acknowledge(&mut self, end: Pos) {
        if end <= self.pos {
            return;
        }
        for seg in self.pos.seg..end.seg {
            let _ = fs::remove_file(segment_path(&self.dir, seg));
        }
        self.pos = end;
        let tmp = self.dir.join("cursor.tmp");
        let result = fs::write(&tmp, format!("{} {}\n", end.seg, end.off))
            .and_then(|()| fs::rename(&tmp, self.dir.join("cursor")));
        if let Err(err) = result {
            tracing::warn!(error = %err, "cannot record the callback spool cursor (results may be re-sent)");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: i64) -> String {
        format!(r#"{{"logId":{id},"logDateTim":1,"handleCode":200}}"#)
    }

    fn append(w: &mut SpoolWriter, ids: std::ops::Range<i64>) -> Pos {
        let mut bytes = Vec::new();
        for id in ids {
            bytes.extend_from_slice(item(id).as_bytes());
            bytes.push(b'\n');
        }
        w.append(&bytes).unwrap()
    }

    #[test]
    fn reads_in_order_and_resumes_after_restart_from_the_cursor() {
        let dir = tempfile::tempdir().unwrap();
        let (mut w, mut r) = open(dir.path()).unwrap();
        let durable = append(&mut w, 0..10);
        let batch = r.read_batch(durable, 4).unwrap();
        assert_eq!(batch.lines, (0..4).map(item).collect::<Vec<_>>());
        r.acknowledge(batch.end);
        drop((w, r));

        // "Crash" and restart: the unacknowledged six come back, then new ones, in order.
        let (mut w, r) = open(dir.path()).unwrap();
        let durable = append(&mut w, 10..12);
        let batch = r.read_batch(durable, 100).unwrap();
        assert_eq!(batch.lines, (4..12).map(item).collect::<Vec<_>>());
    }

    #[test]
    fn a_batch_stops_before_the_line_that_would_take_it_over_its_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let (mut w, mut r) = open(dir.path()).unwrap();
        let durable = append(&mut w, 0..10);
        let line = item(0).len() + 1;
        let batch = r.read_batch_within(durable, 100, 3 * line + 1).unwrap();
        assert_eq!(batch.lines, (0..3).map(item).collect::<Vec<_>>());
        r.acknowledge(batch.end);
        let batch = r.read_batch_within(durable, 100, 1).unwrap();
        assert_eq!(batch.lines, vec![item(3)], "one line over the bound still goes, alone");
        r.acknowledge(batch.end);
        let batch = r.read_batch_within(durable, 100, usize::MAX).unwrap();
        assert_eq!(batch.lines, (4..10).map(item).collect::<Vec<_>>());
    }

    #[test]
    fn a_torn_last_line_is_skipped_and_the_next_segment_read() {
        let dir = tempfile::tempdir().unwrap();
        let (mut w, _) = open(dir.path()).unwrap();
        append(&mut w, 0..2);
        w.file.write_all(br#"{"logId":99,"logDa"#).unwrap();
        drop(w);
        let (mut w, mut r) = open(dir.path()).unwrap();
        let durable = append(&mut w, 2..3);
        let batch = r.read_batch(durable, 100).unwrap();
        assert_eq!(batch.lines, (0..3).map(item).collect::<Vec<_>>());
        r.acknowledge(batch.end);
        assert_eq!(
            list_segments(dir.path()).unwrap(),
            vec![batch.end.seg],
            "old segment deleted"
        );
        assert!(r.read_batch(durable, 100).unwrap().lines.is_empty());
    }

    #[test]
    fn segments_roll_over_and_are_read_across() {
        let dir = tempfile::tempdir().unwrap();
        let (mut w, r) = open(dir.path()).unwrap();
        w.off = SEGMENT_MAX_BYTES; // pretend the segment is full
        let first_seg = w.seg;
        let durable = append(&mut w, 0..3);
        assert_eq!(durable.seg, first_seg + 1);
        let batch = r.read_batch(durable, 100).unwrap();
        assert_eq!(batch.lines.len(), 3);
        assert_eq!(batch.end, durable);
    }
}
