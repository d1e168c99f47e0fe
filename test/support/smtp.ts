// A real SMTP server (smtp-server) that keeps what it receives (or, told to, stalls after DATA),
// and a door in front of one that holds connections unanswered until opened: an SMTP server that
// never greets.
import net from "node:net";
import { SMTPServer } from "smtp-server";

export interface ReceivedMail {
  from: string;
  to: string[];
  /** The message as sent, soft line breaks of quoted-printable joined. */
  data: string;
}

export interface TestSmtp {
  port: number;
  received: ReceivedMail[];
  /** What was received for `to`. */
  to(address: string): ReceivedMail[];
  /** While true, a message's data is read and never answered: an SMTP server that stalls after DATA. */
  stalling: boolean;
  /** Messages left unanswered so far. */
  stalled: number;
  close(): Promise<void>;
}

/** `port`: a given one (an SMTP server that comes back where it was); any free one by default. */
export async function startSmtp(port = 0): Promise<TestSmtp> {
  const received: ReceivedMail[] = [];
  const state = { stalling: false, stalled: 0 };
  const smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    onData(stream, session, callback) {
      let data = "";
      stream.setEncoding("utf8");
      if (state.stalling) {
        stream.resume();
        stream.on("end", () => {
          state.stalled += 1;
        });
        return;
      }
      stream.on("data", (chunk: string) => {
        data += chunk;
      });
      stream.on("end", () => {
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          to: session.envelope.rcptTo.map((r) => r.address),
          data: data.replace(/=\r?\n/g, ""),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(port, "127.0.0.1", resolve));
  return {
    port: (smtp.server.address() as net.AddressInfo).port,
    received,
    to: (address) => received.filter((m) => m.to.includes(address)),
    get stalling() {
      return state.stalling;
    },
    set stalling(value) {
      state.stalling = value;
    },
    get stalled() {
      return state.stalled;
    },
    close: () => new Promise<void>((resolve) => smtp.close(() => resolve())),
  };
}

export interface SilentDoor {
  port: number;
  /** Connections held unanswered so far. */
  held: net.Socket[];
  /** From now on, connections go through to `port`. */
  open(port: number): void;
  close(): Promise<void>;
}

export async function startSilentDoor(): Promise<SilentDoor> {
  const held: net.Socket[] = [];
  const sockets = new Set<net.Socket>();
  let target: number | undefined;
  const door = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
    socket.on("close", () => sockets.delete(socket));
    if (target === undefined) {
      held.push(socket);
      return;
    }
    const upstream = net.connect(target, "127.0.0.1");
    upstream.on("error", () => socket.destroy());
    socket.on("close", () => upstream.destroy());
    socket.pipe(upstream).pipe(socket);
  });
  await new Promise<void>((resolve) => door.listen(0, "127.0.0.1", resolve));
  return {
    port: (door.address() as net.AddressInfo).port,
    held,
    open(port) {
      target = port;
    },
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => door.close(() => resolve()));
    },
  };
}
