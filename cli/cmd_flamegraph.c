// SPDX-License-Identifier: MIT
/*
 * dstack flamegraph: a self-contained interactive SVG flame graph.  The
 * bottom bar is every sample; above a frame are the functions it called
 * (inlined functions are frames of their own).  Widths count samples.
 * The embedded script (no network) shows a frame's name, samples and
 * percentage on hover, zooms on click and highlights a search.  Kernel
 * frames are blue-green, user frames warm.  Children are sorted by name
 * and colours come from a hash of the name: the same input gives the
 * same file.  Frames narrower than 0.1 pixel are left out (their samples
 * still count in the frames below them).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "util/grow.h"
#include "util/trie.h"
#include "export_common.h"

#define NONE UINT32_MAX
#define IMG_WIDTH 1200
#define PAD 10
#define FRAME_H 16
#define TOP 40            /* title and buttons */
#define BOTTOM 30         /* status line */
#define MIN_WIDTH 0.1     /* pixels */

struct node {
	uint32_t func;          /* NONE for the root */
	uint32_t parent;
	uint32_t first_child, next;
	uint64_t samples;       /* inclusive */
	uint32_t src, line;     /* the source position of its heaviest stack (DWARF; src 0: none) */
	uint64_t src_weight;    /* that stack's samples */
};

struct flame {
	struct xdata *x;
	uint64_t *weights;      /* per stack: its samples (or ns), summed by count_stack */
	size_t cap_weights;
	struct node *nodes;
	size_t nr, cap;
	struct dsi_trie edges;   /* (parent, func) -> node */
	uint32_t *scratch;      /* sorting children */
};

/* The node of @func under @parent, made if new; NONE on ENOMEM. */
static uint32_t child(struct flame *fl, uint32_t parent, uint32_t func)
{
	struct node *n = dsi_grow(fl->nodes, &fl->cap, fl->nr + 1, sizeof(*n), 1024);
	uint32_t id;
	bool added;

	if (!n || fl->nr >= NONE - 1)
		return NONE;
	fl->nodes = n;
	id = dsi_trie__child(&fl->edges, parent, func, (uint32_t)fl->nr, &added);
	if (added) {
		fl->nodes[fl->nr] = (struct node){ func, parent, NONE, fl->nodes[parent].first_child, 0, 0, 0, 0 };
		fl->nodes[parent].first_child = (uint32_t)fl->nr++;
	}
	return id;
}

/*
 * export_common's sample sink: a flame graph needs a stack's weight, not
 * who sampled it (every tid a comm of its own would keep a sample each).
 */
static int count_stack(void *ctx, const struct xsample *xs)
{
	struct flame *fl = ctx;
	uint64_t *n = dsi_grow_zeroed(fl->weights, &fl->cap_weights, (size_t)xs->stack + 1, sizeof(*n), 1024);

	if (!n)
		return -ENOMEM;
	fl->weights = n;
	fl->weights[xs->stack] += fl->x->time_mode != WALK_CPU ? xs->period : xs->count;   /* --off-cpu/--wall: ns */
	return 0;
}

static int build_tree(struct flame *fl)
{
	const struct xdata *x = fl->x;

	fl->nodes = dsi_grow(NULL, &fl->cap, 1, sizeof(*fl->nodes), 1024);
	if (!fl->nodes)
		return ENOMEM;
	fl->nodes[0] = (struct node){ NONE, NONE, NONE, NONE, 0, 0, 0, 0 };
	fl->nr = 1;
	for (size_t i = 0; i < x->nr_stacks && i < fl->cap_weights; i++) {
		const struct xstack *st = &x->stacks[i];
		uint32_t n = 0;
		uint64_t w = fl->weights[i];

		if (!w)
			continue;
		fl->nodes[0].samples += w;
		for (size_t j = st->len; j-- > 0;) {
			const struct xent *e = &x->ents[st->off + j];
			struct node *nd;

			n = child(fl, n, e->func);
			if (n == NONE)
				return ENOMEM;
			nd = &fl->nodes[n];
			nd->samples += w;
			if (e->src && w > nd->src_weight) {
				nd->src = e->src;
				nd->line = e->line;
				nd->src_weight = w;
			}
		}
	}
	return 0;
}

static const struct xdata *sort_x;

static int cmp_func(const void *a, const void *b)
{
	const struct xfunc *f = &sort_x->funcs[*(const uint32_t *)a], *g = &sort_x->funcs[*(const uint32_t *)b];
	int c = strcmp(sort_x->strs.strs[f->name], sort_x->strs.strs[g->name]);

	if (!c)
		c = strcmp(sort_x->strs.strs[f->dso], sort_x->strs.strs[g->dso]);
	if (!c)
		c = (f->kernel * 2 + f->inlined) - (g->kernel * 2 + g->inlined);
	return c;
}

/* Order every node's children by function name (through their func ids). */
static int sort_children(struct flame *fl)
{
	size_t nr_funcs = fl->x->nr_funcs;
	uint32_t *order = malloc((nr_funcs + 1) * sizeof(*order)), *rank = malloc((nr_funcs + 1) * sizeof(*rank));

	if (!order || !rank) {
		free(order);
		free(rank);
		return ENOMEM;
	}
	for (size_t i = 0; i < nr_funcs; i++)
		order[i] = (uint32_t)i;
	sort_x = fl->x;
	if (nr_funcs > 1)
		qsort(order, nr_funcs, sizeof(*order), cmp_func);
	for (size_t i = 0; i < nr_funcs; i++)
		rank[order[i]] = (uint32_t)i;
	uint32_t *by_rank = malloc((fl->nr + 1) * sizeof(*by_rank));

	if (!by_rank) {
		free(order);
		free(rank);
		return ENOMEM;
	}
	for (size_t i = 0; i < fl->nr; i++) {
		by_rank[i] = (uint32_t)i;
		fl->nodes[i].first_child = NONE;
	}
	/* counting sort of the nodes (root excluded) by the rank of their function */
	uint32_t *cnt = calloc(nr_funcs + 1, sizeof(*cnt));

	if (!cnt) {
		free(order);
		free(rank);
		free(by_rank);
		return ENOMEM;
	}
	for (size_t i = 1; i < fl->nr; i++)
		cnt[rank[fl->nodes[i].func] + 1]++;
	for (size_t r = 0; r < nr_funcs; r++)
		cnt[r + 1] += cnt[r];
	for (size_t i = 1; i < fl->nr; i++)
		by_rank[cnt[rank[fl->nodes[i].func]]++] = (uint32_t)i;
	for (size_t i = fl->nr - 1; i-- > 0;) {
		struct node *n = &fl->nodes[by_rank[i]];

		n->next = fl->nodes[n->parent].first_child;
		fl->nodes[n->parent].first_child = by_rank[i];
	}
	free(cnt);
	free(by_rank);
	free(order);
	free(rank);
	return 0;
}

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static void colour(char *buf, size_t n, const struct xfunc *f, const char *name)
{
	uint32_t h = name_hash(name);

	if (!f)
		snprintf(buf, n, "rgb(200,200,200)");
	else if (f->kernel)
		snprintf(buf, n, "rgb(%u,%u,%u)", 40 + h % 60, 150 + (h >> 8) % 80, 170 + (h >> 16) % 70);
	else if (f->inlined)
		snprintf(buf, n, "rgb(%u,%u,%u)", 215 + h % 40, 120 + (h >> 8) % 90, 20 + (h >> 16) % 40);
	else
		snprintf(buf, n, "rgb(%u,%u,%u)", 205 + h % 50, (h >> 8) % 200, (h >> 16) % 55);
}

/* The label that fits in @width pixels (what the script computes again on zoom). */
static void label(struct outbuf *o, const char *name, double width)
{
	int fit = (int)((width - 6) / 7.2);
	size_t len = strlen(name);
	char buf[1024];

	if (fit < 3)
		return;
	if (len <= (size_t)fit && len < sizeof(buf)) {
		xml_text(o, name);
		return;
	}
	if ((size_t)fit >= sizeof(buf))
		fit = sizeof(buf) - 1;
	snprintf(buf, sizeof(buf), "%.*s..", fit - 2, name);
	xml_text(o, buf);
}

static void frame(struct flame_svg *svg, const struct flame *fl, uint32_t id, uint64_t offset, unsigned depth)
{
	const struct node *n = &fl->nodes[id];
	const struct xfunc *f = n->func == NONE ? NULL : &fl->x->funcs[n->func];
	const char *name = f ? fl->x->strs.strs[f->name] : "all";
	uint64_t total = fl->nodes[0].samples;
	char fill[40], title[4500], where[300] = "";

	colour(fill, sizeof(fill), f, name);
	if (n->src) {
		const char *file = fl->x->strs.strs[n->src], *base = strrchr(file, '/');

		snprintf(where, sizeof(where), " %.250s:%u", base ? base + 1 : file, n->line);
	}
	snprintf(title, sizeof(title), "%.3700s%s%.400s%s%s %llu %s, %.2f%%", name,
		 f && f->inlined ? " (inlined)" : f ? " (" : "", f && !f->inlined ? fl->x->strs.strs[f->dso] : "",
		 f && !f->inlined ? ")" : "", where, (unsigned long long)n->samples, fl->x->time_mode != WALK_CPU ? "ns" : "samples",
		 total ? 100.0 * (double)n->samples / (double)total : 0.0);
	flame_svg_frame(svg, name, title, NULL, fill, (double)offset, (double)n->samples, depth, f ? f->kernel : 0);
}

static unsigned max_depth(const struct flame *fl, double scale)
{
	unsigned best = 0;
	unsigned *depth = calloc(fl->nr, sizeof(*depth));

	if (!depth)
		return 64;
	/* nodes are created after their parent: one pass gives every depth */
	for (size_t i = 1; i < fl->nr; i++) {
		depth[i] = depth[fl->nodes[i].parent] + 1;
		if ((double)fl->nodes[i].samples * scale >= MIN_WIDTH && depth[i] > best)
			best = depth[i];
	}
	free(depth);
	return best;
}

/* The script: W (image width) and PAD are set before it. */
static const char script[] =
"(function () {\n"
"var frames = Array.prototype.slice.call(document.querySelectorAll('g.f'));\n"
"var statusLine = document.getElementById('status'), total = +frames[0].getAttribute('data-s');\n"
"var matchText = document.getElementById('matched'), zoomed = null;\n"
"function fit(g, x, w) {\n"
"  var r = g.querySelector('rect'), t = g.querySelector('text'), n = g.getAttribute('data-n');\n"
"  r.setAttribute('x', x.toFixed(2)); r.setAttribute('width', w.toFixed(2));\n"
"  t.setAttribute('x', (x + 3).toFixed(2));\n"
"  var c = Math.floor((w - 6) / 7.2);\n"
"  t.textContent = c < 3 ? '' : n.length <= c ? n : n.substring(0, c - 2) + '..';\n"
"}\n"
"function describe(g) {\n"
"  var s = +g.getAttribute('data-s'), t = g.getAttribute('data-t');\n"
"  if (t) return t;\n"
"  return g.getAttribute('data-n') + ' (' + s + ' samples, ' + (100 * s / total).toFixed(2) + '%)';\n"
"}\n"
"function zoom(z) {\n"
"  var o = +z.getAttribute('data-o'), s = +z.getAttribute('data-s'), d = +z.getAttribute('data-d');\n"
"  zoomed = d ? z : null;\n"
"  document.getElementById('reset').style.opacity = zoomed ? 1 : 0.3;\n"
"  frames.forEach(function (g) {\n"
"    var go = +g.getAttribute('data-o'), gs = +g.getAttribute('data-s'), gd = +g.getAttribute('data-d');\n"
"    var shown = gd < d ? go <= o && go + gs >= o + s : go >= o && go + gs <= o + s;\n"
"    g.style.display = shown ? '' : 'none';\n"
"    if (shown) fit(g, gd < d ? PAD : PAD + (go - o) / s * (W - 2 * PAD), gd < d ? W - 2 * PAD : gs / s * (W - 2 * PAD));\n"
"  });\n"
"}\n"
"function search(re) {\n"
"  var hit = [], sum = 0, end = -1;\n"
"  frames.forEach(function (g) {\n"
"    var r = g.querySelector('rect');\n"
"    if (!r.hasAttribute('data-fill')) r.setAttribute('data-fill', r.getAttribute('fill'));\n"
"    var m = re && re.test(g.getAttribute('data-n'));\n"
"    r.setAttribute('fill', m ? 'rgb(230,0,230)' : r.getAttribute('data-fill'));\n"
"    if (m) hit.push(g);\n"
"  });\n"
"  hit.sort(function (a, b) { return a.getAttribute('data-o') - b.getAttribute('data-o') || b.getAttribute('data-s') - a.getAttribute('data-s'); });\n"
"  hit.forEach(function (g) {\n"
"    var o = +g.getAttribute('data-o'), s = +g.getAttribute('data-s');\n"
"    if (o >= end) { sum += s; end = o + s; } else if (o + s > end) { sum += o + s - end; end = o + s; }\n"
"  });\n"
"  matchText.textContent = re ? 'Matched: ' + (100 * sum / total).toFixed(2) + '%' : '';\n"
"}\n"
"frames.forEach(function (g) {\n"
"  g.addEventListener('mouseover', function () { statusLine.textContent = describe(g); });\n"
"  g.addEventListener('mouseout', function () { statusLine.textContent = ' '; });\n"
"  g.addEventListener('click', function () { zoom(g); });\n"
"});\n"
"document.getElementById('reset').addEventListener('click', function () { zoom(frames[0]); });\n"
"document.getElementById('search').addEventListener('click', function () {\n"
"  var term = window.prompt('Search for a function (regular expression)', '');\n"
"  if (term === null || term === '') { search(null); return; }\n"
"  try { search(new RegExp(term)); } catch (e) { matchText.textContent = 'bad expression'; }\n"
"});\n"
"document.addEventListener('keydown', function (e) {\n"
"  if ((e.ctrlKey || e.metaKey) && e.key === 'f') { e.preventDefault(); document.getElementById('search').dispatchEvent(new Event('click')); }\n"
"  if (e.key === 'Escape') { search(null); zoom(frames[0]); }\n"
"});\n"
"})();\n"
"]]></script>\n";

static int write_svg(struct flame *fl, int fd, const char *title)
{
	struct flame_svg svg;
	uint64_t total = fl->nodes[0].samples;
	double scale = (double)(IMG_WIDTH - 2 * PAD) / (double)(total ? total : 1);
	/* depth-first, children in name order; explicit stack of (node, offset, depth) */
	struct item { uint32_t id; uint64_t off; unsigned depth; } *stack = malloc((fl->nr + 1) * sizeof(*stack));
	size_t sp = 0;

	if (!stack || flame_svg_begin(&svg, fd, title, (double)total, max_depth(fl, scale))) {
		free(stack);
		return ENOMEM;
	}
	stack[sp++] = (struct item){ 0, 0, 0 };
	while (sp) {
		struct item it = stack[--sp];
		uint64_t off = it.off;
		size_t first = sp;

		frame(&svg, fl, it.id, it.off, it.depth);
		for (uint32_t c = fl->nodes[it.id].first_child; c != NONE; c = fl->nodes[c].next) {
			if ((double)fl->nodes[c].samples * scale >= MIN_WIDTH)
				stack[sp++] = (struct item){ c, off, it.depth + 1 };
			off += fl->nodes[c].samples;
		}
		/* pushed in name order: reverse so the first name is drawn first */
		for (size_t a = first, b = sp; a + 1 < b; a++, b--) {
			struct item t = stack[a];

			stack[a] = stack[b - 1];
			stack[b - 1] = t;
		}
	}
	free(stack);
	return flame_svg_end(&svg);
}

/* --- the SVG, shared with dstack diff --flamegraph (export_common.h) --- */

bool flame_svg_visible(double w, double total)
{
	return w * (double)(IMG_WIDTH - 2 * PAD) / (total > 0 ? total : 1) >= MIN_WIDTH;
}

int flame_svg_begin(struct flame_svg *svg, int fd, const char *title, double total, unsigned depth)
{
	struct outbuf *o = outbuf_new(fd);

	if (!o)
		return ENOMEM;
	svg->o = o;
	svg->total = total;
	svg->scale = (double)(IMG_WIDTH - 2 * PAD) / (total > 0 ? total : 1);
	svg->height = TOP + BOTTOM + (depth + 1) * FRAME_H;
	outbuf_printf(o, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
			 "<svg version=\"1.1\" width=\"%d\" height=\"%u\" viewBox=\"0 0 %d %u\" "
			 "xmlns=\"http://www.w3.org/2000/svg\" data-samples=\"%.0f\">\n"
			 "<style>text { font-family: monospace; font-size: 12px; fill: #000; } "
			 "g.f text { pointer-events: none; } g.f:hover rect { stroke: #000; stroke-width: 0.5; } "
			 ".button { cursor: pointer; fill: #224; text-decoration: underline; }</style>\n"
			 "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#f8f8f0\"/>\n"
			 "<text x=\"%d\" y=\"24\" text-anchor=\"middle\" style=\"font-size: 17px\">",
		      IMG_WIDTH, svg->height, IMG_WIDTH, svg->height, total, IMG_WIDTH / 2);
	xml_text(o, title);
	outbuf_printf(o, "</text>\n<text id=\"reset\" class=\"button\" x=\"%d\" y=\"24\" style=\"opacity: 0.3\">Reset Zoom</text>\n"
			 "<text id=\"search\" class=\"button\" x=\"%d\" y=\"24\" text-anchor=\"end\">Search</text>\n"
			 "<text id=\"matched\" x=\"%d\" y=\"%u\" text-anchor=\"end\"> </text>\n"
			 "<text id=\"status\" x=\"%d\" y=\"%u\"> </text>\n",
		      PAD, IMG_WIDTH - PAD, IMG_WIDTH - PAD, svg->height - 10, PAD, svg->height - 10);
	return 0;
}

void flame_svg_frame(struct flame_svg *svg, const char *name, const char *title, const char *status,
		     const char *fill, double offset, double width, unsigned depth, bool kernel)
{
	struct outbuf *o = svg->o;
	double x = PAD + offset * svg->scale, w = width * svg->scale;
	unsigned y = svg->height - BOTTOM - (depth + 1) * FRAME_H;

	outbuf_printf(o, "<g class=\"f\" data-o=\"%.0f\" data-s=\"%.0f\" data-d=\"%u\" data-k=\"%d\" data-n=\"",
		      offset, width, depth, kernel);
	xml_text(o, name);
	if (status) {
		outbuf_puts(o, "\" data-t=\"");
		xml_text(o, status);
	}
	outbuf_puts(o, "\"><title>");
	xml_text(o, title);
	outbuf_printf(o, "</title><rect x=\"%.2f\" y=\"%u\" width=\"%.2f\" height=\"%u\" fill=\"%s\" rx=\"2\"/>"
			 "<text x=\"%.2f\" y=\"%u\">", x, y, w, FRAME_H - 1, fill, x + 3, y + 11);
	label(o, name, w);
	outbuf_puts(o, "</text></g>\n");
}

int flame_svg_end(struct flame_svg *svg)
{
	struct outbuf *o = svg->o;
	int err;

	outbuf_printf(o, "<script type=\"text/ecmascript\"><![CDATA[\n'use strict';\nvar W = %d, PAD = %d;\n", IMG_WIDTH, PAD);
	outbuf_puts(o, script);
	outbuf_puts(o, "</svg>\n");
	outbuf_flush(o);
	err = o->error;
	outbuf_delete(o);
	svg->o = NULL;
	return err;
}

int cmd_flamegraph(int argc, char **argv)
{
	struct xdata x = { 0 };
	struct flame fl = { .x = &x };
	const char *output;
	int fd, err, ret;

	x.sample_sink = count_stack;   /* a flame graph counts samples by stack */
	x.sink_ctx = &fl;
	x.comm_to_sink = true;         /* and shows no comm */
	ret = export_collect("flamegraph", "flamegraph.svg", argc, argv, &x, &fd, &output);

	if (ret == -1 || (ret == EXIT_USAGE && fd < 0)) {
		xdata_free(&x);
		return ret == -1 ? EXIT_OK : ret;
	}
	char title[300];

	snprintf(title, sizeof(title), "Flame Graph: %s", xdata_title(&x));
	if (!(err = build_tree(&fl)) && !(err = sort_children(&fl)))
		err = write_svg(&fl, fd, title);
	int fin = export_finish("flamegraph", fd, output, err);

	free(fl.nodes);
	free(fl.weights);
	dsi_trie__exit(&fl.edges);
	xdata_free(&x);
	return ret != EXIT_OK ? ret : fin;
}
