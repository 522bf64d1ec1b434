import { EventEmitter } from "node:events";
import { createServer } from "node:net";
import { expect, test } from "vitest";
import { describeListenFailure, exitOnListenFailure } from "./listen-failure.ts";

const errno = (code: string) => Object.assign(new Error(`listen ${code}`), { code });

test.each([
  [
    "EADDRINUSE",
    { port: 8080, portVariable: "PORT" },
    "port 8080 is already in use by another process; stop it, or set PORT to a free port",
  ],
  [
    "EADDRINUSE",
    { port: 3000, host: "127.0.0.1", portVariable: "PORT" },
    "127.0.0.1 port 3000 is already in use by another process; stop it, or set PORT to a free port",
  ],
  [
    "EACCES",
    { port: 80, portVariable: "STREAM_PORT" },
    "not allowed to listen on port 80 (ports below 1024 need privileges); set STREAM_PORT to a port above 1023",
  ],
  [
    "EADDRNOTAVAIL",
    { port: 8080, host: "10.9.9.9", portVariable: "PORT" },
    "cannot listen on 10.9.9.9 port 8080: no interface of this machine has that address; set LISTEN_HOST to one it has, or unset it",
  ],
  ["EMFILE", { port: 8080, portVariable: "PORT" }, "cannot listen on port 8080: EMFILE"],
])("%s %o", (code, target, line) => {
  expect(describeListenFailure(errno(code), target)).toBe(line);
});

test("a real bind failure ends in one line through `exit`; once listening, later errors are not its business", async () => {
  const holder = createServer();
  await new Promise<void>((r) => holder.listen(0, "127.0.0.1", () => r()));
  const port = (holder.address() as { port: number }).port;
  const lines: string[] = [];
  const second = createServer();
  const failed = new Promise<void>((r) => {
    exitOnListenFailure(second, { prefix: "handlers", port, host: "127.0.0.1", portVariable: "PORT" }, (line) => {
      lines.push(line);
      r();
    });
  });
  second.listen(port, "127.0.0.1");
  await failed;
  expect(lines).toEqual([`handlers: 127.0.0.1 port ${port} is already in use by another process; stop it, or set PORT to a free port`]);
  holder.close();

  const fake = new EventEmitter() as unknown as import("node:net").Server;
  const after: string[] = [];
  exitOnListenFailure(fake, { prefix: "x", port: 1, portVariable: "PORT" }, (l) => after.push(l));
  fake.emit("listening");
  expect(fake.listenerCount("error")).toBe(0);
  expect(after).toEqual([]);
});
