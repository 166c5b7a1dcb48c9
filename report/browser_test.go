package report

import (
	"context"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromium returns the path of a Chromium binary, "" when none is installed.
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestReportInChromium opens two reports in headless Chromium as a reader would — the fixed run's, and the small
// run's with option probabilities and a human reference — each must load with no console error, no exception and
// no request beyond the file itself, and show its charts; the second its distribution bars too. Each screenshot
// is saved as report.png in the test's temp dir (printed with -v); SILICO_REPORT_SCREENSHOT=/path.png keeps a copy
// of each to look at (the second as /path-distributions.png).
func TestReportInChromium(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("chromium not installed (apt-get install chromium): skipping the browser test")
	}
	t.Run("quickstart", func(t *testing.T) {
		dir, _ := render(t)
		openInChromium(t, bin, dir, "", nil)
	})
	t.Run("order", func(t *testing.T) {
		spec, recs := orderRun(t)
		dir, _ := renderRun(t, spec, recs)
		openInChromium(t, bin, dir, "-order", func(bctx context.Context) {
			// Each model's all-items line is shown; its item lines are folded away.
			all, err := chromedp.Run(bctx, chromedp.Evaluate[int](`[...document.querySelectorAll("#order ~ div.scroll td[data-key$='/all/first_bias']")].filter(e => e.checkVisibility()).length`))
			if err != nil {
				t.Fatal(err)
			}
			items, err := chromedp.Run(bctx, chromedp.Evaluate[int](`[...document.querySelectorAll("#order ~ details td[data-key$='/first_bias']")].filter(e => e.checkVisibility()).length`))
			if err != nil {
				t.Fatal(err)
			}
			if all != 2 || items != 0 {
				t.Errorf("%d all-items lines and %d item lines visible; want 2 and 0 (folded)", all, items)
			}
		})
	})
	t.Run("distributions", func(t *testing.T) {
		dir, _ := renderRun(t, distSpec(t), distRecords())
		openInChromium(t, bin, dir, "-distributions", func(bctx context.Context) {
			// The first model's section is unfolded: its bars take room on the page; the second's are folded away.
			shown, err := chromedp.Run(bctx, chromedp.Evaluate[int](`[...document.querySelectorAll("details.dist .pmf .m")].filter(e => e.checkVisibility()).length`))
			if err != nil {
				t.Fatal(err)
			}
			tall, err := chromedp.Run(bctx, chromedp.Evaluate[float64](`document.querySelector("details.dist[open] .pmf .m").getBoundingClientRect().height`))
			if err != nil {
				t.Fatal(err)
			}
			// m1: 2 items × 3 options; its q1 option 1 has p = 0.41, the humans' option 3 the largest, 0.5.
			if want := 0.41 / 0.5 * pmfHeight; shown != 6 || math.Abs(tall-want) > 0.5 {
				t.Errorf("%d model bars shown, the first %.2f px high; want 6, %.2f px", shown, tall, want)
			}
		})
	})
}

// openInChromium opens dir's report and checks it as TestReportInChromium says; extra checks more on the page.
// suffix goes before .png in the name of the copy SILICO_REPORT_SCREENSHOT asks for.
func openInChromium(t *testing.T, bin, dir, suffix string, extra func(context.Context)) {
	page := (&url.URL{Scheme: "file", Path: filepath.Join(dir, FileName)}).String()

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox cannot start
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 1000),
		chromedp.UserDataDir(t.TempDir()),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()

	var (
		mu       sync.Mutex
		problems []string
		requests []string
	)
	// Listen starts the browser and the tab; runtime, log and network events are enabled by chromedp.
	err := chromedp.Listen(bctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			switch e.Type {
			case runtime.ConsoleAPICalledTypeError, runtime.ConsoleAPICalledTypeWarning, runtime.ConsoleAPICalledTypeAssert:
				var args []string
				for _, a := range e.Args {
					args = append(args, a.Description+string(a.Value))
				}
				problems = append(problems, "console."+string(e.Type)+": "+strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+e.ExceptionDetails.Text)
		case *cdplog.EventEntryAdded:
			// Failed loads, blocked requests and Content-Security-Policy violations arrive here.
			if e.Entry.Level == cdplog.EntryLevelError || e.Entry.Level == cdplog.EntryLevelWarning {
				problems = append(problems, "log "+string(e.Entry.Level)+": "+e.Entry.Text+" "+e.Entry.URL)
			}
		case *network.EventRequestWillBeSent:
			requests = append(requests, e.Request.URL)
		}
	})
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("footer"))); err != nil {
		t.Fatalf("open the report: %v", err)
	}
	svgs, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("svg").length`))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#reliability + p + div table tbody tr").length`))
	if err != nil {
		t.Fatal(err)
	}
	if extra != nil {
		extra(bctx)
	}
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	// Let late events (a deferred console message) arrive before judging, within the test's deadline.
	if err := chromedp.Do(bctx, chromedp.Sleep(300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Errorf("browser reported %s", p)
	}
	for _, r := range requests {
		if r != page {
			t.Errorf("the page made a request: %s", r)
		}
	}
	if len(requests) == 0 {
		t.Error("saw no request at all, not even the page's: network events are not being observed")
	}
	// 2 models × (scale chart + heatmap) + 2 histograms.
	if svgs != 2*2+2 {
		t.Errorf("%d SVG charts rendered, want 6", svgs)
	}
	if rows == 0 {
		t.Error("the reliability table has no rows in the browser")
	}
	if len(png) < 10_000 {
		t.Fatalf("screenshot of %d bytes", len(png))
	}
	shot := filepath.Join(t.TempDir(), "report.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", shot)
	if p := os.Getenv("SILICO_REPORT_SCREENSHOT"); p != "" {
		// For a person to look at: keep a copy where asked.
		p = strings.TrimSuffix(p, ".png") + suffix + ".png"
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
