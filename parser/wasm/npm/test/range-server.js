// A loopback HTTP server of files with range requests, for the package's
// and the page's tests: `cors` adds the headers a page on another origin
// needs; `faults` answers some requests with a status instead.
import { createServer } from 'node:http';
import { openSync, readSync, fstatSync, closeSync } from 'node:fs';
import { join, normalize } from 'node:path';

export function rangeServer({ root, cors = false, faults = {} } = {}) {
  const log = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    log.push({ method: req.method, path: url.pathname, range: req.headers.range ?? null });
    const headers = {};
    if (cors) {
      headers['access-control-allow-origin'] = '*';
      headers['access-control-expose-headers'] = 'Content-Range, Content-Length, ETag';
    }
    const fault = faults[url.pathname];
    if (fault != null) {
      res.writeHead(fault, headers);
      res.end();
      return;
    }
    const path = normalize(join(root, decodeURIComponent(url.pathname)));
    if (!path.startsWith(root)) {
      res.writeHead(403, headers).end();
      return;
    }
    let fd;
    try {
      fd = openSync(path, 'r');
    } catch {
      res.writeHead(404, headers).end();
      return;
    }
    try {
      const size = fstatSync(fd).size;
      headers.etag = `"${size}"`;
      headers['accept-ranges'] = 'bytes';
      const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
      if (m == null) {
        headers['content-length'] = String(size);
        res.writeHead(200, headers);
        if (req.method === 'HEAD') return res.end();
        const buf = Buffer.alloc(size);
        readSync(fd, buf, 0, size, 0);
        return res.end(buf);
      }
      const start = Number(m[1]);
      const end = Math.min(m[2] === '' ? size - 1 : Number(m[2]), size - 1);
      if (start >= size) {
        headers['content-range'] = `bytes */${size}`;
        return res.writeHead(416, headers).end();
      }
      const buf = Buffer.alloc(end - start + 1);
      readSync(fd, buf, 0, buf.length, start);
      headers['content-range'] = `bytes ${start}-${end}/${size}`;
      headers['content-length'] = String(buf.length);
      res.writeHead(206, headers);
      res.end(req.method === 'HEAD' ? undefined : buf);
    } finally {
      closeSync(fd);
    }
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      resolve({ base: `http://127.0.0.1:${port}`, log, close: () => new Promise((r) => server.close(r)) });
    });
  });
}
