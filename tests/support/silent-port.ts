/**
 * A port on 127.0.0.1 where a connection is never set up: a listener that accepts nothing, its
 * backlog already full, so the kernel drops further SYNs and a connect waits, as it does for an
 * address behind a firewall that drops packets. Bun's servers always accept, so python3 holds it.
 */
const HOLDER = `
import socket, sys
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(0)
port = listener.getsockname()[1]
fillers = []
for _ in range(4):
    filler = socket.socket()
    filler.setblocking(False)
    try:
        filler.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    fillers.append(filler)
print(port, flush=True)
sys.stdin.read()
`;

export async function silentPort(): Promise<{ port: number; stop(): void }> {
  const holder = Bun.spawn(["python3", "-c", HOLDER], { stdin: "pipe", stdout: "pipe", stderr: "inherit" });
  const reader = holder.stdout.getReader();
  let printed = "";
  while (!printed.includes("\n")) {
    const { done, value } = await reader.read();
    if (done) throw new Error("the silent port's holder exited");
    printed += new TextDecoder().decode(value);
  }
  return { port: Number(printed.trim()), stop: () => holder.kill() };
}
