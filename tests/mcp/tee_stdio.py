"""Runs a stdio MCP server and records the session: every line the client writes and every line
the server answers, as JSON lines `{"from": "client"|"server", "message": {...}}` in LOG.

Usage: python tee_stdio.py LOG COMMAND [ARGS...] (the MCP client starts this in place of the
server, so the transcript is exactly what went over the pipes)."""
import json
import subprocess
import sys
import threading


def main():
    log_path, cmd = sys.argv[1], sys.argv[2:]
    child = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    lock = threading.Lock()
    log = open(log_path, "w", encoding="utf-8")

    def record(who, line):
        try:
            message = json.loads(line)
        except ValueError:
            message = {"unparsed": line.decode("utf-8", "replace")}
        with lock:
            log.write(json.dumps({"from": who, "message": message}, sort_keys=True) + "\n")
            log.flush()

    def server_to_client():
        for line in child.stdout:
            record("server", line)
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()

    pump = threading.Thread(target=server_to_client)
    pump.start()
    for line in sys.stdin.buffer:
        record("client", line)
        child.stdin.write(line)
        child.stdin.flush()
    child.stdin.close()
    code = child.wait()
    pump.join()
    log.close()
    sys.exit(code)


if __name__ == "__main__":
    main()
