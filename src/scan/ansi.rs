//! ANSI escape removal for matching: a colour code can split a literal
//! (`\x1b[31mRuntimeError\x1b[0m: CUDA out of memory`), so lines holding an ESC are matched
//! with their escapes removed. Bytes in, bytes out; it decides nothing else.

/// Remove ANSI escape sequences (CSI `ESC [ … final`, OSC `ESC ] … BEL|ESC \`, and
/// two-byte escapes) into `out`. Only called on lines that contain an ESC byte.
pub fn strip_ansi(line: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut i = 0;
    while i < line.len() {
        let b = line[i];
        if b != 0x1b {
            out.push(b);
            i += 1;
            continue;
        }
        match line.get(i + 1) {
            Some(b'[') => {
                i += 2;
                while i < line.len() && !(0x40..=0x7e).contains(&line[i]) && line[i] != b'\n' {
                    i += 1;
                }
                if i < line.len() && line[i] != b'\n' {
                    i += 1;
                }
            }
            Some(b']') => {
                i += 2;
                while i < line.len() && line[i] != 0x07 && line[i] != 0x1b && line[i] != b'\n' {
                    i += 1;
                }
                if i < line.len() && line[i] == 0x1b {
                    i += 2;
                } else if i < line.len() && line[i] == 0x07 {
                    i += 1;
                }
            }
            Some(_) => i += 2,
            None => i += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansi_sequences_are_removed() {
        let mut out = Vec::new();
        strip_ansi(b"\x1b[31mRuntimeError\x1b[0m: CUDA out of memory", &mut out);
        assert_eq!(out, b"RuntimeError: CUDA out of memory");
    }
}
