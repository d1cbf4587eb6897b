//! Zone files inside an uncompressed zip (Go's `lib/time/zoneinfo.zip` form), read
//! entry by entry with every offset checked against the file.

use std::path::Path;

use super::{MAX_FILE_SIZE, TzError, Zone};

/// The largest part of a zip file read at once (its central directory, or one
/// entry): Go's `zoneinfo.zip` directory is about 40 KiB.
const MAX_ZIP_READ: u64 = 1 << 24;

/// Reads `name` from the zip file `zip` as Go's `loadTzinfoFromZip` does (the form of
/// Go's own `lib/time/zoneinfo.zip`): the central directory from the end record, the
/// entry by exact name, stored (uncompressed) entries only, the data after the local
/// header. `Ok(None)` when the zip has no such entry; Go's messages otherwise. Every
/// offset and length is checked against the file, so a malformed zip is an error.
pub(super) fn read_zone_zip(zip: &Path, name: &str) -> Result<Option<Zone>, TzError> {
    let file = match std::fs::File::open(zip) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(TzError::Io(e.to_string())),
    };
    let len = file.metadata().map_err(|e| TzError::Io(e.to_string()))?.len();
    read_zone_zip_from(file, len, &zip.display(), name)
}

/// [`read_zone_zip`] over any seekable reader of `len` bytes; `shown` names it in
/// errors. The fuzz target reads zip bytes from memory through this.
pub(crate) fn read_zone_zip_from(
    mut file: impl std::io::Read + std::io::Seek,
    len: u64,
    shown: &dyn std::fmt::Display,
    name: &str,
) -> Result<Option<Zone>, TzError> {
    use std::io::SeekFrom;
    const END_RECORD: u32 = 0x0605_4b50;
    const CENTRAL_HEADER: u32 = 0x0201_4b50;
    const LOCAL_HEADER: u32 = 0x0403_4b50;
    let corrupt = || TzError::Io(format!("corrupt zip file {shown}"));
    let mut read_at = |offset: u64, n: u64| -> Result<Vec<u8>, TzError> {
        if offset.checked_add(n).is_none_or(|end| end > len) || n > MAX_ZIP_READ {
            return Err(corrupt());
        }
        let mut buf = vec![0; n as usize];
        file.seek(SeekFrom::Start(offset)).and_then(|_| file.read_exact(&mut buf)).map_err(|_| corrupt())?;
        Ok(buf)
    };
    let u16_at = |b: &[u8], at: usize| b.get(at..at + 2).map(|x| u16::from_le_bytes([x[0], x[1]]));
    let u32_at = |b: &[u8], at: usize| b.get(at..at + 4).map(|x| u32::from_le_bytes([x[0], x[1], x[2], x[3]]));
    let tail = read_at(len.checked_sub(22).ok_or_else(corrupt)?, 22)?;
    if u32_at(&tail, 0) != Some(END_RECORD) {
        return Err(corrupt());
    }
    let (Some(entries), Some(dir_size), Some(dir_off)) = (u16_at(&tail, 10), u32_at(&tail, 12), u32_at(&tail, 16))
    else {
        return Err(corrupt());
    };
    let dir = read_at(u64::from(dir_off), u64::from(dir_size))?;
    let mut at = 0usize;
    for _ in 0..entries {
        if u32_at(&dir, at) != Some(CENTRAL_HEADER) {
            break;
        }
        let field = |o: usize| u16_at(&dir, at + o).map(usize::from).ok_or_else(corrupt);
        let (method, name_len, extra_len, comment_len) = (field(10)?, field(28)?, field(30)?, field(32)?);
        let size = u32_at(&dir, at + 24).ok_or_else(corrupt)?;
        let offset = u32_at(&dir, at + 42).ok_or_else(corrupt)?;
        let entry_name = dir.get(at + 46..at + 46 + name_len).ok_or_else(corrupt)?;
        at += 46 + name_len + extra_len + comment_len;
        if entry_name != name.as_bytes() {
            continue;
        }
        if method != 0 {
            return Err(TzError::Io(format!("unsupported compression for {name} in {shown}")));
        }
        let local = read_at(u64::from(offset), 30 + name_len as u64)?;
        let consistent = u32_at(&local, 0) == Some(LOCAL_HEADER)
            && u16_at(&local, 8).map(usize::from) == Some(method)
            && u16_at(&local, 26).map(usize::from) == Some(name_len)
            && local.get(30..) == Some(name.as_bytes());
        let local_extra = u16_at(&local, 28).ok_or_else(corrupt)?;
        if !consistent {
            return Err(corrupt());
        }
        if u64::from(size) > MAX_FILE_SIZE {
            return Err(TzError::TooLarge(format!("{shown}/{name}")));
        }
        let data = read_at(u64::from(offset) + 30 + name_len as u64 + u64::from(local_extra), u64::from(size))?;
        return Zone::parse(&data).map(Some);
    }
    Ok(None)
}
