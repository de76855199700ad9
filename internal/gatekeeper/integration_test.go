package gatekeeper

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gate"

	"github.com/waitroom/waitroom"
	"github.com/waitroom/waitroom/internal/admit"
)

// lookPath finds a binary the test needs: missing, it skips naming the
// Debian package, or fails under CI=true.
func lookPath(t *testing.T, name, pkg string) string {
	t.Helper()
	for _, p := range []string{name, "/usr/sbin/" + name, "/usr/bin/" + name} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	msg := fmt.Sprintf("%s not found; install the Debian package %s (apt-get install %s)", name, pkg, pkg)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startProcess runs cmd until the test ends and waits for addr to accept
// connections. On failure it prints logFile.
func startProcess(t *testing.T, cmd *exec.Cmd, addr, logFile string) {
	t.Helper()
	out, err := os.Create(filepath.Join(t.TempDir(), "output"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", cmd.Path, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	dump := func() {
		for _, f := range []string{out.Name(), logFile} {
			if b, err := os.ReadFile(f); err == nil {
				t.Logf("%s:\n%s", f, b)
			}
		}
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			dump()
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-done:
			dump()
			t.Fatalf("%s exited before listening on %s", cmd.Path, addr)
		default:
		}
		if time.Now().After(deadline) {
			dump()
			t.Fatalf("%s did not listen on %s within 15s", cmd.Path, addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// example reads a file of examples/ and points it at the test's servers.
func example(t *testing.T, name string, replace ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", name))
	if err != nil {
		t.Fatalf("reading the example: %v", err)
	}
	s := string(b)
	for i := 0; i+1 < len(replace); i += 2 {
		if !strings.Contains(s, replace[i]) {
			t.Fatalf("example %s has no %q to replace", name, replace[i])
		}
		s = strings.ReplaceAll(s, replace[i], replace[i+1])
	}
	return s
}

// frontEnv is a waitroom server and an app for a proxy in front of both.
type frontEnv struct {
	*env
	app *httptest.Server
}

func newFrontEnv(t *testing.T) *frontEnv {
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 1
	e := newEnv(t, envConfig{room: cfg, clock: waitroom.SystemClock{}, gateCfg: func(c *Config) { c.ResyncWindow = time.Nanosecond }})
	e.serve(nil)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "app:"+r.Header.Get(gate.HeaderSession))
		for k, v := range r.Header {
			if strings.Contains(strings.Join(v, ","), "forged") {
				io.WriteString(w, " "+k+"=forged")
			}
		}
	}))
	t.Cleanup(app.Close)
	return &frontEnv{env: e, app: app}
}

// allowReturn lets the waiting page send visitors back to origin.
func (f *frontEnv) allowReturn(origin string) {
	cfg := waitroom.DefaultConfig()
	cfg.Capacity = 1
	cfg.ReturnOrigins = []string{origin}
	if _, _, err := f.mem.PutRoom(context.Background(), "default", cfg, time.Now()); err != nil {
		f.t.Fatal(err)
	}
}

// browser is a client with cookies that follows redirects.
type browser struct {
	t      *testing.T
	client *http.Client
}

func newBrowser(t *testing.T) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, client: &http.Client{Jar: jar, Timeout: 10 * time.Second}}
}

// get loads rawURL as a browser would and returns where it ended.
func (b *browser) get(rawURL string) (final *url.URL, status int, body string) {
	b.t.Helper()
	return b.getWith(rawURL, nil)
}

// getWith is get with more request headers, each name sent as it is.
func (b *browser) getWith(rawURL string, header map[string]string) (final *url.URL, status int, body string) {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, rawURL, nil)
	req.Header.Set("Accept", "text/html,application/xhtml+xml")
	for k, v := range header {
		req.Header[k] = []string{v}
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatalf("GET %s: %v", rawURL, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.Request.URL, resp.StatusCode, string(data)
}

func (b *browser) cookie(base, name string) string {
	u, _ := url.Parse(base)
	for _, c := range b.client.Jar.Cookies(u) {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

// scenario plays the acceptance story through a proxy at front: an
// unadmitted browser ends at the waiting page, once admitted it reaches
// the app, and after an admin revoke it is back in line.
func scenario(t *testing.T, f *frontEnv, front string) {
	ctx := context.Background()
	occupant := f.join()
	if occupant.Status != waitroom.StatusActive {
		t.Fatalf("occupant: got %s, want active", occupant.Status)
	}
	b := newBrowser(t)

	final, status, _ := b.get(front + "/shop/cart?item=7")
	if status != http.StatusOK || final.Path != "/r/default" || final.Query().Get("return_to") != front+"/shop/cart?item=7" {
		t.Fatalf("unadmitted browser: ended at %d %s, want 200 at the waiting page with return_to", status, final)
	}
	sid := b.cookie(front, admit.CookieName("default"))
	got, err := f.store.Sessions(ctx, "default", []string{sid})
	if err != nil || got[0].Status != waitroom.StatusWaiting {
		t.Fatalf("browser's session: got %+v (err %v), want waiting", got, err)
	}

	if _, err := f.store.Leave(ctx, "default", occupant.ID, waitroom.ReasonLeft, time.Now()); err != nil {
		t.Fatal(err)
	}
	// The waiting page, reloaded, sends the admitted visitor back.
	final, status, body := b.get(front + "/r/default?return_to=" + url.QueryEscape(front+"/shop/cart?item=7"))
	if status != http.StatusOK || body != "app:"+sid || final.Path != "/shop/cart" {
		t.Fatalf("admitted browser: ended at %d %s with %q, want the app with its session", status, final, body)
	}
	if b.cookie(front, gate.CookieName("default", false)) == "" {
		t.Fatal("admitted browser holds no pass cookie")
	}
	_, status, body = b.get(front + "/shop/other")
	if status != http.StatusOK || body != "app:"+sid {
		t.Fatalf("admitted browser, next page: got %d %q, want the app", status, body)
	}
	// Identity forged in any spelling (CGI-style stacks read _ as -) does
	// not reach the app beside the real one.
	forged := map[string]string{}
	for _, k := range []string{"Waitroom_Session", "WAITROOM-SESSION", "waitroom_ticket", "Waitroom_Room"} {
		forged[k] = "forged"
	}
	_, status, body = b.getWith(front+"/shop/other", forged)
	if status != http.StatusOK || body != "app:"+sid {
		t.Fatalf("admitted browser with forged identity headers: got %d %q, want the app with only the real identity", status, body)
	}

	next := f.join()
	req, _ := http.NewRequest(http.MethodDelete, front+"/v1/rooms/default/sessions/"+sid, nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("admin DELETE through the proxy: got %d, want 200", resp.StatusCode)
	}
	final, status, _ = b.get(front + "/shop/other")
	if status != http.StatusOK || final.Path != "/r/default" {
		t.Fatalf("revoked browser: ended at %d %s, want the waiting page", status, final)
	}
	newSID := b.cookie(front, admit.CookieName("default"))
	got, err = f.store.Sessions(ctx, "default", []string{newSID, next.ID})
	if err != nil || newSID == sid || got[0].Status != waitroom.StatusWaiting || got[1].Status != waitroom.StatusActive {
		t.Fatalf("after revoke: browser %+v, next %+v (err %v), want the browser waiting anew behind the next in line", got[0], got[1], err)
	}
}

func TestNginxAuthRequest(t *testing.T) {
	bin := lookPath(t, "nginx", "nginx")
	f := newFrontEnv(t)
	dir := t.TempDir()
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	f.allowReturn("http://" + addr)
	site := example(t, "nginx/waitroom.conf",
		"listen 80;", "listen "+addr+";",
		"127.0.0.1:8080", strings.TrimPrefix(f.srv.URL, "http://"),
		"127.0.0.1:9000", strings.TrimPrefix(f.app.URL, "http://"),
	)
	if err := os.WriteFile(filepath.Join(dir, "waitroom.conf"), []byte(site), 0o600); err != nil {
		t.Fatal(err)
	}
	errLog := filepath.Join(dir, "error.log")
	main := fmt.Sprintf(`daemon off;
master_process off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[2]s info;
events { worker_connections 256; }
http {
    access_log %[1]s/access.log;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    include %[1]s/waitroom.conf;
}
`, dir, errLog)
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(main), 0o600); err != nil {
		t.Fatal(err)
	}
	startProcess(t, exec.Command(bin, "-p", dir, "-c", conf, "-e", errLog), addr, errLog)
	scenario(t, f, "http://"+addr)
}

func TestCaddyForwardAuth(t *testing.T) {
	bin := lookPath(t, "caddy", "caddy")
	f := newFrontEnv(t)
	dir := t.TempDir()
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	f.allowReturn("http://" + addr)
	caddyfile := example(t, "caddy/Caddyfile",
		":80 {", ":"+strconv.Itoa(port)+" {\n\tbind 127.0.0.1",
		"127.0.0.1:8080", strings.TrimPrefix(f.srv.URL, "http://"),
		"127.0.0.1:9000", strings.TrimPrefix(f.app.URL, "http://"),
	)
	path := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(path, []byte(caddyfile), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--config", path, "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir+"/data", "XDG_CONFIG_HOME="+dir+"/config")
	startProcess(t, cmd, addr, "")
	scenario(t, f, "http://"+addr)
}
