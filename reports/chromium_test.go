package reports_test

import (
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lessim/lessim/reports"
)

// chromium finds Debian's chromium, installing it with apt-get when it is
// missing and the test runs as root; otherwise the test is skipped.
func chromium(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	if os.Geteuid() != 0 {
		t.Skip("chromium is not installed and installing it needs root: apt-get install chromium")
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		t.Skip("chromium is not installed and there is no apt-get to install it")
	}
	install := func() error {
		cmd := exec.Command("apt-get", "install", "-y", "--no-install-recommends", "chromium")
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Logf("apt-get install chromium: %v\n%s", err, out)
		}
		return err
	}
	if install() != nil {
		if out, err := exec.Command("apt-get", "update").CombinedOutput(); err != nil {
			t.Skipf("apt-get update failed, cannot install chromium: %v\n%s", err, out)
		}
		if install() != nil {
			t.Skip("could not install chromium")
		}
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium installed but not on PATH")
	}
	return p
}

// imageCheck runs in the page once everything loaded and writes, into the
// DOM, how many images decoded (naturalWidth > 0) out of how many.
const imageCheck = `<script>
window.addEventListener("load", function () {
  var imgs = document.images, ok = 0;
  for (var i = 0; i < imgs.length; i++) { if (imgs[i].complete && imgs[i].naturalWidth > 0) ok++; }
  var d = document.createElement("div");
  d.id = "image-check";
  d.textContent = "loaded " + ok + " of " + imgs.length;
  document.body.appendChild(d);
});
</script>
</body>`

// TestReportRendersInChromium opens report.html in headless Chromium and
// checks that every embedded plot decoded, and takes a screenshot.
func TestReportRendersInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	bin := chromium(t)
	dir := fullResults(t)
	tb, err := reports.ReadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	rep, err := reports.WriteReport(tb, dir, out)
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(out, reports.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	// The check runs in a copy: the report itself carries no script.
	checked := filepath.Join(out, "checked.html")
	if err := os.WriteFile(checked, []byte(strings.Replace(string(page), "</body>", imageCheck, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000", "--user-data-dir=" + t.TempDir()}
	dom, err := exec.CommandContext(ctx, bin, append(args, "--dump-dom", "file://"+checked)...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	m := regexp.MustCompile(`<div id="image-check">loaded (\d+) of (\d+)</div>`).FindSubmatch(dom)
	if m == nil {
		t.Fatalf("the page's image check did not run; DOM tail:\n%s", tail(dom, 400))
	}
	if string(m[1]) != string(m[2]) || string(m[2]) != strconv.Itoa(len(rep.Drawn)) {
		t.Errorf("chromium loaded %s of %s images; the report drew %d plots", m[1], m[2], len(rep.Drawn))
	}
	shot := filepath.Join(out, "out.png")
	cmd := exec.CommandContext(ctx, bin, append(args, "--screenshot="+shot, "--window-size=1200,2000", "file://"+filepath.Join(out, reports.ReportFile))...)
	cmd.Dir = out
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, b)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil || cfg.Width != 1200 || cfg.Height != 2000 {
		t.Errorf("screenshot: %v %dx%d", err, cfg.Width, cfg.Height)
	}
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
