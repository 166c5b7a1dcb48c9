package report

import (
	"context"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
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

// TestReportInChromium opens reports in headless Chromium as a reader would — the fixed run's, the small run's
// with option probabilities and a human reference, and the bfi-like run's with seven reference groups at a
// desktop and a phone width — each must load with no console error, no exception and no request beyond the file
// itself, and show its charts. Each screenshot is saved in the test's temp dir (printed with -v);
// SILICO_SCREENSHOTS=dir keeps a copy of each there, named report-<case>-<width>.png, for a person to look at.
func TestReportInChromium(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("chromium not installed (apt-get install chromium): skipping the browser test")
	}
	t.Run("quickstart", func(t *testing.T) {
		dir, _ := render(t)
		openInChromium(t, bin, dir, pageView{"quickstart", 1280, 2*2 + 2}, nil)
	})
	t.Run("order", func(t *testing.T) {
		spec, recs := orderRun(t)
		dir, _ := renderRun(t, spec, recs)
		openInChromium(t, bin, dir, pageView{"order", 1280, 2*2 + 2}, func(bctx context.Context) {
			// Each model's all-items line is shown; its item lines are folded away.
			all := evaluate[int](t, bctx, `[...document.querySelectorAll("#order ~ div.scroll td[data-key$='/all/first_effect']")].filter(e => e.checkVisibility()).length`)
			items := evaluate[int](t, bctx, `[...document.querySelectorAll("#order ~ details td[data-key$='/first_effect']")].filter(e => e.checkVisibility()).length`)
			if all != 2 || items != 0 {
				t.Errorf("%d all-items lines and %d item lines visible; want 2 and 0 (folded)", all, items)
			}
		})
	})
	t.Run("distributions", func(t *testing.T) {
		dir, _ := renderRun(t, distSpec(t), distRecords())
		openInChromium(t, bin, dir, pageView{"distributions", 1280, 2*2 + 2}, func(bctx context.Context) {
			// The first model's section is unfolded: its bars take room on the page; the second's are folded away.
			shown := evaluate[int](t, bctx, `[...document.querySelectorAll("details.dist .pmf .m")].filter(e => e.checkVisibility()).length`)
			tall := evaluate[float64](t, bctx, `document.querySelector("details.dist[open] .pmf .m").getBoundingClientRect().height`)
			// m1: 2 items × 3 options; its q1 option 1 has p = 0.41, the humans' option 3 the largest, 0.5.
			if want := 0.41 / 0.5 * pmfHeight; shown != 6 || math.Abs(tall-want) > 0.5 {
				t.Errorf("%d model bars shown, the first %.2f px high; want 6, %.2f px", shown, tall, want)
			}
			// On paper nothing folds: both models' tables print.
			if err := chromedp.Do(bctx, emulateMedia("print")); err != nil {
				t.Fatal(err)
			}
			printed := evaluate[int](t, bctx, `[...document.querySelectorAll("details.dist table.dist")].filter(e => e.checkVisibility()).length`)
			if err := chromedp.Do(bctx, emulateMedia("")); err != nil {
				t.Fatal(err)
			}
			if printed != 2 {
				t.Errorf("%d of 2 models' tables visible in print", printed)
			}
		})
	})
	t.Run("bfi", func(t *testing.T) {
		spec, recs := bfiRun(t)
		dir, _ := renderRun(t, spec, recs)
		for _, width := range []int{1280, 420} {
			openInChromium(t, bin, dir, pageView{"bfi", width, 1*2 + 2}, func(bctx context.Context) {
				checkGroups(t, bctx, width, len(spec.Questionnaire.Items))
				checkScaleTables(t, bctx, width)
				checkValidity(t, bctx, width)
			})
		}
	})
}

// groupSeen is what the browser shows of one group's section (see checkGroups).
type groupSeen struct {
	Heading        string
	HeadingVisible bool
	TableVisible   bool
	Rows           int
	// Numbers counts the row cells whose text is a visible number; Percents the visible percentages under the
	// bars.
	Numbers, Percents int
	// Scroll: the table is in a scroll container that fits the viewport (it may scroll inside it).
	Scroll bool
}

// checkGroups asserts, at the page's width, that each of the bfi-like report's seven groups has its heading and
// its table on screen with a row per item whose figures are text, and that the page does not overflow the
// viewport sideways.
func checkGroups(t *testing.T, bctx context.Context, width, items int) {
	t.Helper()
	groups := evaluate[[]groupSeen](t, bctx, `[...document.querySelectorAll("section.group")].map(s => {
		const h = s.querySelector("h3"), tb = s.querySelector("table.dist"), box = tb.closest(".scroll");
		const visible = e => e.checkVisibility() && e.getBoundingClientRect().width > 0;
		return {
			Heading: h.textContent, HeadingVisible: visible(h), TableVisible: visible(tb),
			Rows: tb.tBodies[0].rows.length,
			Numbers: [...tb.querySelectorAll("tbody [data-key]")].filter(e => visible(e) && /^[-−]?[0-9][0-9,]*(\.[0-9]+)?%?$/.test(e.innerText.trim())).length,
			Percents: [...tb.querySelectorAll(".pmf .pv")].filter(e => visible(e) && /^[0-9]+$/.test(e.innerText.trim())).length,
			Scroll: box !== null && box.getBoundingClientRect().right <= document.documentElement.clientWidth + 0.5,
		};
	})`)
	want := []string{"everyone", "gender = 1", "gender = 2", "age_band = 0-17", "age_band = 18-29", "age_band = 30-44", "age_band = 45+"}
	if len(groups) != len(want) {
		t.Fatalf("width %d: %d group sections, want %d", width, len(groups), len(want))
	}
	for i, g := range groups {
		// Everyone's rows have n_cells, two entropies, alignment and W1 each with its uniform baseline, split
		// halves and perfect model, SimBench and JSD each with its perfect model, the two mean scores,
		// respondents and the three per-cell columns; a group's all but the last three.
		perRow := 18
		if i == 0 {
			perRow = 21
		}
		if g.Heading != want[i] || !g.HeadingVisible || !g.TableVisible || g.Rows != items ||
			g.Numbers != perRow*items || g.Percents != 2*6*items || !g.Scroll {
			t.Errorf("width %d, group %d: %+v; want heading %q visible, a visible table of %d rows in a scroll box within the page, %d numbers and %d percentages in its text",
				width, i, g, want[i], items, perRow*items, 2*6*items)
		}
	}
	over := evaluate[[]int](t, bctx, `[document.documentElement.scrollWidth, document.documentElement.clientWidth, document.body.scrollWidth]`)
	if over[0] > over[1] || over[2] > over[1] {
		t.Errorf("width %d: the page is %d px wide (body %d) in a viewport of %d: it overflows sideways", width, over[0], over[2], over[1])
	}
	if over[1] > width || over[1] < width-20 {
		t.Errorf("the viewport is %d px wide, want about %d", over[1], width)
	}
}

// whiskersInCells is a script giving [whiskers visible under sel, of them drawn outside their cell] for a
// selector of the tables to look in.
const whiskersInCells = `sel => {
	const ws = [...document.querySelectorAll(sel + " svg.wh")].filter(e => e.checkVisibility());
	const out = ws.filter(w => {
		const r = w.getBoundingClientRect(), c = w.closest("td").getBoundingClientRect();
		return r.left < c.left - 0.5 || r.right > c.right + 0.5 || r.width === 0;
	});
	return [ws.length, out.length];
}`

// checkScaleTables asserts that each group's scale table is on screen with the uniform baseline and the humans'
// split halves beside the scales' mean alignment and W1, the perfect model beside those and SimBench, a line
// over every item last, and the α and ω intervals drawn as whiskers inside their cells.
func checkScaleTables(t *testing.T, bctx context.Context, width int) {
	t.Helper()
	type scaleSeen struct {
		Visible                   bool
		Baselines, Splits, Floors int
		Last                      string
		Whiskers, Outside         int
	}
	seen := evaluate[[]scaleSeen](t, bctx, `[...document.querySelectorAll("section.group")].map((s, i) => {
		const tb = s.querySelector("table.scales"), heads = [...tb.tHead.querySelectorAll("th")].filter(e => e.checkVisibility());
		s.querySelectorAll("table.scales").forEach(e => e.setAttribute("data-probe", i));
		const w = (`+whiskersInCells+`)("table.scales[data-probe='" + i + "'] tr:not(.overall)");
		const rows = tb.tBodies[0].querySelectorAll("tr:not(.rownote)");
		return {
			Visible: tb.checkVisibility() && tb.getBoundingClientRect().width > 0,
			Baselines: heads.filter(e => e.textContent === "baseline (uniform)").length,
			Splits: heads.filter(e => e.textContent === "humans vs humans (split halves)").length,
			Floors: heads.filter(e => e.textContent === "perfect model (floor)").length,
			Last: rows[rows.length - 1].cells[0].innerText.trim(),
			Whiskers: w[0], Outside: w[1],
		};
	})`)
	if len(seen) != 7 {
		t.Fatalf("width %d: %d groups with a scale table, want 7", width, len(seen))
	}
	for i, g := range seen {
		// Five scales; α and ω of each side have intervals where they have a value (some age bands' model
		// figures are empty), so at least the humans' 10.
		if !g.Visible || g.Baselines != 2 || g.Splits != 2 || g.Floors != 3 || g.Last != "all items every item" || g.Whiskers < 10 || g.Outside != 0 {
			t.Errorf("width %d, group %d: scale table %+v; want it visible with 2 uniform, 2 split-half and 3 perfect-model columns, the line of all items last, at least 10 whiskers, none outside its cell",
				width, i, g)
		}
	}
}

// checkValidity asserts that the validity section shows, for the model, a heading, a sentence and a table for
// each of the six checks in order, with whiskers inside their cells, and that on paper the folded item lines
// print too.
func checkValidity(t *testing.T, bctx context.Context, width int) {
	t.Helper()
	checks := evaluate[[]string](t, bctx, `[...document.querySelectorAll("details.checks h3[data-check]")].filter(e => e.checkVisibility()).map(e => e.dataset.check)`)
	want := []string{"sim/sd_ratio", "sim/r2", "sim/difference", "sim/acquiescence", "sim/contradiction", "sim/congruence"}
	if !slices.Equal(checks, want) {
		t.Errorf("width %d: validity checks shown %v, want %v", width, checks, want)
	}
	type tableSeen struct {
		Visible bool
		Rows    int
		// RowsWithNumber are the rows with a visible figure, RowsNoted the others with a note saying why;
		// Whiskers the visible whiskers of the table.
		RowsWithNumber, RowsNoted, Whiskers int
		Sentence                            bool
		InViewWidth                         bool
	}
	tables := evaluate[[]tableSeen](t, bctx, `[...document.querySelectorAll("details.checks h3[data-check]")].map(h => {
		const p = h.nextElementSibling, tb = p.nextElementSibling.querySelector("table.validity");
		const visible = e => e.checkVisibility() && e.getBoundingClientRect().width > 0;
		return {
			Visible: visible(tb), Rows: tb.tBodies[0].rows.length,
			RowsWithNumber: [...tb.tBodies[0].rows].filter(r => [...r.querySelectorAll("[data-key]")].some(e => !/\/n_(personas|humans)$/.test(e.dataset.key) && visible(e) && /^[-−]?[0-9][0-9,]*(\.[0-9]+)?$/.test(e.innerText.trim()))).length,
			RowsNoted: [...tb.tBodies[0].rows].filter(r => ![...r.querySelectorAll("[data-key]")].some(e => !/\/n_(personas|humans)$/.test(e.dataset.key) && visible(e) && /^[-−]?[0-9][0-9,]*(\.[0-9]+)?$/.test(e.innerText.trim())) && visible(r.lastElementChild) && r.lastElementChild.innerText.trim() !== "").length,
			Whiskers: [...tb.querySelectorAll("svg.wh")].filter(e => e.checkVisibility()).length,
			Sentence: visible(p) && p.innerText.includes("It guards against"),
			InViewWidth: tb.closest(".scroll").getBoundingClientRect().right <= document.documentElement.clientWidth + 0.5,
		};
	})`)
	for i, tb := range tables {
		// Every line of the bfi-like run with a figure has its interval (a whisker); a line without one (a scale
		// with one keying has no acquiescence) says why.
		if !tb.Visible || tb.Rows == 0 || tb.RowsWithNumber == 0 || tb.RowsWithNumber+tb.RowsNoted != tb.Rows || tb.Whiskers < tb.RowsWithNumber || !tb.Sentence || !tb.InViewWidth {
			t.Errorf("width %d: validity table %d: %+v; want it visible within the page, a figure and a whisker or a note per row, and its sentence", width, i, tb)
		}
	}
	w := evaluate[[]int](t, bctx, "("+whiskersInCells+`)("details.checks")`)
	if w[0] < 20 || w[1] != 0 {
		t.Errorf("width %d: %d whiskers in the validity section, %d outside their cells; want some, none outside", width, w[0], w[1])
	}
	if err := chromedp.Do(bctx, emulateMedia("print")); err != nil {
		t.Fatal(err)
	}
	printed := evaluate[[]int](t, bctx, `[[...document.querySelectorAll("details.checks table.validity")].filter(e => e.checkVisibility()).length, document.querySelectorAll("details.checks table.validity").length]`)
	if err := chromedp.Do(bctx, emulateMedia("")); err != nil {
		t.Fatal(err)
	}
	if printed[0] != printed[1] || printed[1] <= len(want) {
		t.Errorf("width %d: %d of %d validity tables visible in print, want all (the folded item lines too)", width, printed[0], printed[1])
	}
}

// emulateMedia makes the page apply the CSS of media ("print"; "" for the screen again).
func emulateMedia(media string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Media: media})
		return err
	})
}

// evaluate runs a script in the page and returns its value.
func evaluate[T any](t *testing.T, bctx context.Context, script string) T {
	t.Helper()
	v, err := chromedp.Run(bctx, chromedp.Evaluate[T](script))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// pageView is a page to open: Name names its screenshots, Width is the window's width in CSS pixels, SVGs the
// charts the page must have.
type pageView struct {
	Name  string
	Width int
	SVGs  int
}

// openInChromium opens dir's report as v says and checks it as TestReportInChromium says; extra checks more on
// the page.
func openInChromium(t *testing.T, bin, dir string, v pageView, extra func(context.Context)) {
	page := (&url.URL{Scheme: "file", Path: filepath.Join(dir, FileName)}).String()

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox cannot start
		chromedp.DisableGPU,
		chromedp.WindowSize(v.Width, 1000),
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
	// The viewport, not the window: a headless window is at least 500 px wide, a phone's viewport narrower.
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(int64(v.Width), 1000), chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("footer"))); err != nil {
		t.Fatalf("open the report: %v", err)
	}
	svgs, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("svg:not(.wh)").length`))
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
	// Per model a scale chart and a heatmap, and 2 histograms.
	if svgs != v.SVGs {
		t.Errorf("%d SVG charts rendered, want %d", svgs, v.SVGs)
	}
	if rows == 0 {
		t.Error("the reliability table has no rows in the browser")
	}
	if len(png) < 10_000 {
		t.Fatalf("screenshot of %d bytes", len(png))
	}
	name := "report-" + v.Name + "-" + strconv.Itoa(v.Width) + ".png"
	shot := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", shot)
	if d := os.Getenv("SILICO_SCREENSHOTS"); d != "" {
		// For a person to look at: keep a copy where asked.
		if err := os.WriteFile(filepath.Join(d, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
