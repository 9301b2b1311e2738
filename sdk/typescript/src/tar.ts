// A minimal POSIX tar (ustar + pax long names) writer and reader for uploadDir/downloadDir.
// Format: POSIX.1-2001 "pax" (IEEE Std 1003.1, pax utility, "ustar Interchange Format").

/** One member: a regular file (data), a directory, or a symlink (linkname). */
export interface TarEntry {
  name: string;
  type: "file" | "dir" | "symlink";
  mode: number;
  data?: Uint8Array;
  linkname?: string;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

function octal(value: number, width: number): string {
  return value.toString(8).padStart(width - 1, "0") + "\0";
}

function header(name: string, type: string, mode: number, size: number, link: string) {
  const h = new Uint8Array(512);
  const put = (off: number, text: string) => h.set(enc.encode(text).subarray(0, 512 - off), off);
  put(0, name);
  put(100, octal(mode & 0o7777, 8));
  put(108, octal(0, 8));
  put(116, octal(0, 8));
  put(124, octal(size, 12));
  put(136, octal(Math.floor(Date.now() / 1000), 12));
  put(148, "        ");
  put(156, type);
  put(157, link);
  put(257, "ustar\0");
  put(263, "00");
  let sum = 0;
  for (const b of h) sum += b;
  put(148, sum.toString(8).padStart(6, "0") + "\0 ");
  return h;
}

function pad(n: number): Uint8Array {
  return new Uint8Array((512 - (n % 512)) % 512);
}

function paxRecord(key: string, value: string): string {
  // "<len> key=value\n" where len counts the whole record, its own digits included.
  const bodyLen = enc.encode(` ${key}=${value}\n`).length;
  let len = bodyLen + 1;
  while (String(len).length + bodyLen !== len) len++;
  return `${len} ${key}=${value}\n`;
}

/** Builds a tar archive of the entries (names relative, "/"-separated). */
export function writeTar(entries: TarEntry[]): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const e of entries) {
    const data = e.type === "file" ? e.data ?? new Uint8Array() : new Uint8Array();
    const link = e.linkname ?? "";
    let name = e.type === "dir" && !e.name.endsWith("/") ? e.name + "/" : e.name;
    if (enc.encode(name).length > 99 || enc.encode(link).length > 99) {
      let pax = paxRecord("path", name);
      if (link) pax += paxRecord("linkpath", link);
      const bytes = enc.encode(pax);
      parts.push(header("PaxHeader", "x", 0o644, bytes.length, ""), bytes, pad(bytes.length));
      name = name.slice(0, 99);
    }
    const flag = e.type === "file" ? "0" : e.type === "dir" ? "5" : "2";
    parts.push(header(name, flag, e.mode, data.length, link.slice(0, 99)), data, pad(data.length));
  }
  parts.push(new Uint8Array(1024));
  const total = parts.reduce((n, p) => n + p.length, 0);
  const out = new Uint8Array(total);
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

function field(h: Uint8Array, off: number, len: number): string {
  const raw = h.subarray(off, off + len);
  const end = raw.indexOf(0);
  return dec.decode(end < 0 ? raw : raw.subarray(0, end));
}

function parsePax(data: Uint8Array): Record<string, string> {
  const out: Record<string, string> = {};
  let off = 0;
  while (off < data.length) {
    const sp = data.indexOf(0x20, off);
    if (sp < 0) break;
    const len = parseInt(dec.decode(data.subarray(off, sp)), 10);
    if (!(len > 0)) break;
    const rec = dec.decode(data.subarray(sp + 1, off + len - 1));
    const eq = rec.indexOf("=");
    if (eq > 0) out[rec.slice(0, eq)] = rec.slice(eq + 1);
    off += len;
  }
  return out;
}

/** A member read back: like TarEntry, plus "other" for types that are skipped. */
export interface TarMember {
  name: string;
  type: "file" | "dir" | "symlink" | "hardlink" | "other";
  mode: number;
  data: Uint8Array;
  linkname: string;
}

/** Parses a tar archive (ustar, pax 'x' records, GNU 'L'/'K' long names). */
export function readTar(buf: Uint8Array): TarMember[] {
  const out: TarMember[] = [];
  let off = 0;
  let pax: Record<string, string> = {};
  let longName: string | undefined;
  let longLink: string | undefined;
  while (off + 512 <= buf.length) {
    const h = buf.subarray(off, off + 512);
    if (h.every((b) => b === 0)) break;
    const sizeText = field(h, 124, 12).trim();
    const size = pax.size !== undefined ? Number(pax.size) : parseInt(sizeText || "0", 8);
    const flag = String.fromCharCode(h[156] || 0x30);
    const data = buf.subarray(off + 512, off + 512 + size);
    off += 512 + size + ((512 - (size % 512)) % 512);
    if (flag === "x") {
      pax = { ...pax, ...parsePax(data) };
      continue;
    }
    if (flag === "g") continue;
    if (flag === "L" || flag === "K") {
      const text = field(data, 0, data.length);
      if (flag === "L") longName = text;
      else longLink = text;
      continue;
    }
    const prefix = field(h, 345, 155);
    let name = pax.path ?? longName ?? (prefix ? prefix + "/" : "") + field(h, 0, 100);
    const linkname = pax.linkpath ?? longLink ?? field(h, 157, 100);
    pax = {};
    longName = longLink = undefined;
    name = name.replace(/^\.\//, "").replace(/\/+$/, "");
    const type =
      flag === "0" || flag === "\0" || flag === "7"
        ? "file"
        : flag === "5"
          ? "dir"
          : flag === "2"
            ? "symlink"
            : flag === "1"
              ? "hardlink"
              : "other";
    out.push({ name, type, mode: parseInt(field(h, 100, 8).trim() || "0", 8), data, linkname });
  }
  return out;
}
