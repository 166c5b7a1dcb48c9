# Logs every request and response body between silico and llama-server (one JSON line each), unchanged.
import http.server, json, sys, urllib.request
UP = "http://127.0.0.1:18080"
log = open(sys.argv[2], "a")
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        req = urllib.request.Request(UP + self.path, body, {"Content-Type": "application/json"})
        try:
            r = urllib.request.urlopen(req); status, out = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, out = e.code, e.read()
        log.write(json.dumps({"req": json.loads(body), "status": status, "resp": json.loads(out)}) + "\n"); log.flush()
        self.send_response(status); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out))); self.end_headers(); self.wfile.write(out)
    def do_GET(self):
        r = urllib.request.urlopen(UP + self.path); out = r.read()
        self.send_response(r.status); self.send_header("Content-Length", str(len(out))); self.end_headers(); self.wfile.write(out)
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
