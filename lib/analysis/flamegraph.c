// SPDX-License-Identifier: MIT
/*
 * Flame graphs (dstack/export.h): the samples' stacks interned by the
 * stack model (dstack/stacks.h), a weight per stack, then one tree of
 * frames by the model's frame ids, children ordered by name, drawn as SVG
 * (ds_flame_svg, also for trees of the caller's).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dstack/export.h"
#include "dstack/stacks.h"
#include "analysis/wbuf.h"
#include "util/grow.h"
#include "util/trie.h"

#define NONE UINT32_MAX
#define IMG_WIDTH 1200
#define PAD 10
#define FRAME_H 16
#define TOP 40            /* title and buttons */
#define BOTTOM 30         /* status line */
#define MIN_WIDTH 0.1     /* pixels */

struct node {
	uint32_t frame;         /* the model's frame id; NONE for the root */
	uint32_t parent;
	uint32_t first_child, next;
	uint64_t samples;       /* inclusive */
	uint32_t src, line;     /* the source position of its heaviest stack (DWARF; src 0: none) */
	uint64_t src_weight;    /* that stack's samples */
};

struct ds_flamegraph {
	struct ds_flamegraph_opts o;
	char *title, *unit;
	struct ds_stacks *model;
	uint64_t *weights;      /* per stack: its samples (or periods) */
	size_t cap_weights;
	struct node *nodes;
	size_t nr, cap;
	struct dsi_trie edges;   /* (parent, frame) -> node */
	bool written;
};

struct ds_flame_svg {
	struct dsi_wbuf w;
	double total, scale;
	unsigned height;
};

/* The model's sample callback: a flame graph needs a stack's weight, not who sampled it. */
static int count_stack(void *ctx, const struct ds_stacks_sample *s, const char *comm)
{
	struct ds_flamegraph *fg = ctx;
	uint64_t *n = dsi_grow_zeroed(fg->weights, &fg->cap_weights, (size_t)s->stack + 1, sizeof(*n), 1024);

	if (!n)
		return -ENOMEM;
	fg->weights = n;
	fg->weights[s->stack] += fg->o.period ? s->period : s->count;
	return 0;
}

struct ds_flamegraph *ds_flamegraph__new(const struct ds_flamegraph_opts *opts)
{
	struct ds_flamegraph *fg = calloc(1, sizeof(*fg));

	if (!fg) {
		errno = ENOMEM;
		return NULL;
	}
	if (opts)
		memcpy(&fg->o, opts, opts->sz < sizeof(fg->o) ? opts->sz : sizeof(fg->o));
	fg->o.sz = sizeof(fg->o);
	struct ds_stacks_opts mo = {
		.sz = sizeof(mo), .srclines = true, .maps = true,
		.sample_fn = count_stack, .sample_ctx = fg, .comms_to_fn = true,
	};

	fg->title = strdup(fg->o.title ? fg->o.title : "Flame Graph");
	fg->unit = strdup(fg->o.unit ? fg->o.unit : "samples");
	fg->model = ds_stacks__new(&mo);
	if (!fg->title || !fg->unit || !fg->model) {
		ds_flamegraph__delete(fg);
		errno = ENOMEM;
		return NULL;
	}
	return fg;
}

void ds_flamegraph__delete(struct ds_flamegraph *fg)
{
	if (!fg)
		return;
	ds_stacks__delete(fg->model);
	free(fg->title);
	free(fg->unit);
	free(fg->weights);
	free(fg->nodes);
	dsi_trie__exit(&fg->edges);
	free(fg);
}

int ds_flamegraph__add(struct ds_flamegraph *fg, const struct ds_profile_sample *s)
{
	return fg->written ? -EINVAL : ds_stacks__add(fg->model, s);
}

/* The node of @frame under @parent, made if new; NONE on ENOMEM. */
static uint32_t child(struct ds_flamegraph *fg, uint32_t parent, uint32_t frame)
{
	struct node *n = dsi_grow(fg->nodes, &fg->cap, fg->nr + 1, sizeof(*n), 1024);
	uint32_t id;
	bool added;

	if (!n || fg->nr >= NONE - 1)
		return NONE;
	fg->nodes = n;
	id = dsi_trie__child(&fg->edges, parent, frame, (uint32_t)fg->nr, &added);
	if (added) {
		fg->nodes[fg->nr] = (struct node){ frame, parent, NONE, fg->nodes[parent].first_child, 0, 0, 0, 0 };
		fg->nodes[parent].first_child = (uint32_t)fg->nr++;
	}
	return id;
}

static int build_tree(struct ds_flamegraph *fg)
{
	size_t nr_stacks = ds_stacks__nr_stacks(fg->model);

	fg->nodes = dsi_grow(NULL, &fg->cap, 1, sizeof(*fg->nodes), 1024);
	if (!fg->nodes)
		return -ENOMEM;
	fg->nodes[0] = (struct node){ NONE, NONE, NONE, NONE, 0, 0, 0, 0 };
	fg->nr = 1;
	for (size_t i = 0; i < nr_stacks && i < fg->cap_weights; i++) {
		size_t len;
		const struct ds_stacks_entry *e = ds_stacks__stack(fg->model, (uint32_t)i, &len);
		uint32_t n = 0;
		uint64_t w = fg->weights[i];

		if (!w)
			continue;
		fg->nodes[0].samples += w;
		for (size_t j = len; j-- > 0;) {
			struct node *nd;

			n = child(fg, n, e[j].frame);
			if (n == NONE)
				return -ENOMEM;
			nd = &fg->nodes[n];
			nd->samples += w;
			if (e[j].src && w > nd->src_weight) {
				nd->src = e[j].src;
				nd->line = e[j].line;
				nd->src_weight = w;
			}
		}
	}
	return 0;
}

static int cmp_frame(const void *a, const void *b, void *ctx)
{
	const struct ds_stacks *st = ctx;
	const struct ds_stacks_frame *f = ds_stacks__frame(st, *(const uint32_t *)a);
	const struct ds_stacks_frame *g = ds_stacks__frame(st, *(const uint32_t *)b);
	int c = strcmp(ds_stacks__str(st, f->name), ds_stacks__str(st, g->name));

	if (!c)
		c = strcmp(ds_stacks__str(st, f->dso), ds_stacks__str(st, g->dso));
	if (!c)
		c = (f->kernel * 2 + f->inlined) - (g->kernel * 2 + g->inlined);
	return c;
}

/* Order every node's children by frame name (a counting sort of the nodes by their frame's rank). */
static int sort_children(struct ds_flamegraph *fg)
{
	size_t nr_frames = ds_stacks__nr_frames(fg->model);
	uint32_t *order = malloc((nr_frames + 1) * sizeof(*order)), *rank = malloc((nr_frames + 1) * sizeof(*rank));
	uint32_t *by_rank = malloc((fg->nr + 1) * sizeof(*by_rank)), *cnt = calloc(nr_frames + 1, sizeof(*cnt));

	if (!order || !rank || !by_rank || !cnt) {
		free(order);
		free(rank);
		free(by_rank);
		free(cnt);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nr_frames; i++)
		order[i] = (uint32_t)i;
	if (nr_frames > 1)
		qsort_r(order, nr_frames, sizeof(*order), cmp_frame, fg->model);
	for (size_t i = 0; i < nr_frames; i++)
		rank[order[i]] = (uint32_t)i;
	for (size_t i = 0; i < fg->nr; i++) {
		by_rank[i] = (uint32_t)i;
		fg->nodes[i].first_child = NONE;
	}
	for (size_t i = 1; i < fg->nr; i++)
		cnt[rank[fg->nodes[i].frame] + 1]++;
	for (size_t r = 0; r < nr_frames; r++)
		cnt[r + 1] += cnt[r];
	for (size_t i = 1; i < fg->nr; i++)
		by_rank[cnt[rank[fg->nodes[i].frame]]++] = (uint32_t)i;
	for (size_t i = fg->nr - 1; i-- > 0;) {
		struct node *n = &fg->nodes[by_rank[i]];

		n->next = fg->nodes[n->parent].first_child;
		fg->nodes[n->parent].first_child = by_rank[i];
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

static void colour(char *buf, size_t n, const struct ds_stacks_frame *f, const char *name)
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

static void frame(struct ds_flame_svg *svg, const struct ds_flamegraph *fg, uint32_t id, uint64_t offset,
		  unsigned depth)
{
	const struct ds_stacks *st = fg->model;
	const struct node *n = &fg->nodes[id];
	const struct ds_stacks_frame *f = n->frame == NONE ? NULL : ds_stacks__frame(st, n->frame);
	const char *name = f ? ds_stacks__str(st, f->name) : "all";
	uint64_t total = fg->nodes[0].samples;
	char fill[40], title[4500], where[300] = "";

	colour(fill, sizeof(fill), f, name);
	if (n->src) {
		const char *file = ds_stacks__str(st, n->src), *base = strrchr(file, '/');

		snprintf(where, sizeof(where), " %.250s:%u", base ? base + 1 : file, n->line);
	}
	snprintf(title, sizeof(title), "%.3700s%s%.400s%s%s %llu %.40s, %.2f%%", name,
		 f && f->inlined ? " (inlined)" : f ? " (" : "", f && !f->inlined ? ds_stacks__str(st, f->dso) : "",
		 f && !f->inlined ? ")" : "", where, (unsigned long long)n->samples, fg->unit,
		 total ? 100.0 * (double)n->samples / (double)total : 0.0);
	ds_flame_svg__frame(svg, name, title, NULL, fill, (double)offset, (double)n->samples, depth, f ? f->kernel : 0);
}

static unsigned max_depth(const struct ds_flamegraph *fg, double scale)
{
	unsigned best = 0;
	unsigned *depth = calloc(fg->nr, sizeof(*depth));

	if (!depth)
		return 64;
	/* nodes are created after their parent: one pass gives every depth */
	for (size_t i = 1; i < fg->nr; i++) {
		depth[i] = depth[fg->nodes[i].parent] + 1;
		if ((double)fg->nodes[i].samples * scale >= MIN_WIDTH && depth[i] > best)
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

static int write_svg(struct ds_flamegraph *fg, ds_write_fn fn, void *ctx)
{
	struct ds_flame_svg *svg;
	uint64_t total = fg->nodes[0].samples;
	double scale = (double)(IMG_WIDTH - 2 * PAD) / (double)(total ? total : 1);
	/* depth-first, children in name order; explicit stack of (node, offset, depth) */
	struct item { uint32_t id; uint64_t off; unsigned depth; } *stack = malloc((fg->nr + 1) * sizeof(*stack));
	size_t sp = 0;

	if (!stack || !(svg = ds_flame_svg__begin(fn, ctx, fg->title, (double)total, max_depth(fg, scale)))) {
		free(stack);
		return -ENOMEM;
	}
	stack[sp++] = (struct item){ 0, 0, 0 };
	while (sp && !svg->w.error) {
		struct item it = stack[--sp];
		uint64_t off = it.off;
		size_t first = sp;

		frame(svg, fg, it.id, it.off, it.depth);
		for (uint32_t c = fg->nodes[it.id].first_child; c != NONE; c = fg->nodes[c].next) {
			if ((double)fg->nodes[c].samples * scale >= MIN_WIDTH)
				stack[sp++] = (struct item){ c, off, it.depth + 1 };
			off += fg->nodes[c].samples;
		}
		/* pushed in name order: reverse so the first name is drawn first */
		for (size_t a = first, b = sp; a + 1 < b; a++, b--) {
			struct item t = stack[a];

			stack[a] = stack[b - 1];
			stack[b - 1] = t;
		}
	}
	free(stack);
	return ds_flame_svg__end(svg);
}

int ds_flamegraph__write(struct ds_flamegraph *fg, ds_write_fn fn, void *ctx)
{
	int err;

	if (fg->written)
		return -EINVAL;
	fg->written = true;
	if ((err = build_tree(fg)) || (err = sort_children(fg)))
		return err;
	return write_svg(fg, fn, ctx);
}

/* --- the drawing --------------------------------------------------------- */

/* The label that fits in @width pixels (what the script computes again on zoom). */
static void label(struct dsi_wbuf *o, const char *name, double width)
{
	double chars = (width - 6) / 7.2;
	size_t len = strlen(name);
	char buf[1024];
	int fit;

	if (!(chars >= 3))   /* NaN too */
		return;
	/* a width past any screen (a hostile weight or size): as long a label as fits the buffer */
	fit = chars < (double)sizeof(buf) ? (int)chars : (int)sizeof(buf) - 1;
	if (len <= (size_t)fit && len < sizeof(buf)) {
		dsi_wbuf__xml(o, name);
		return;
	}
	if ((size_t)fit >= sizeof(buf))
		fit = sizeof(buf) - 1;
	snprintf(buf, sizeof(buf), "%.*s..", fit - 2, name);
	dsi_wbuf__xml(o, buf);
}

bool ds_flame_svg__visible(double w, double total)
{
	return w * (double)(IMG_WIDTH - 2 * PAD) / (total > 0 ? total : 1) >= MIN_WIDTH;
}

struct ds_flame_svg *ds_flame_svg__begin(ds_write_fn fn, void *ctx, const char *title, double total,
					 unsigned depth)
{
	struct ds_flame_svg *svg = calloc(1, sizeof(*svg));
	struct dsi_wbuf *o;

	if (!svg || dsi_wbuf__init(&svg->w, fn, ctx)) {
		free(svg);
		errno = ENOMEM;
		return NULL;
	}
	o = &svg->w;
	svg->total = total;
	svg->scale = (double)(IMG_WIDTH - 2 * PAD) / (total > 0 ? total : 1);
	svg->height = TOP + BOTTOM + (depth + 1) * FRAME_H;
	dsi_wbuf__printf(o, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
			 "<svg version=\"1.1\" width=\"%d\" height=\"%u\" viewBox=\"0 0 %d %u\" "
			 "xmlns=\"http://www.w3.org/2000/svg\" data-samples=\"%.0f\">\n"
			 "<style>text { font-family: monospace; font-size: 12px; fill: #000; } "
			 "g.f text { pointer-events: none; } g.f:hover rect { stroke: #000; stroke-width: 0.5; } "
			 ".button { cursor: pointer; fill: #224; text-decoration: underline; }</style>\n"
			 "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#f8f8f0\"/>\n"
			 "<text x=\"%d\" y=\"24\" text-anchor=\"middle\" style=\"font-size: 17px\">",
		      IMG_WIDTH, svg->height, IMG_WIDTH, svg->height, total, IMG_WIDTH / 2);
	dsi_wbuf__xml(o, title);
	dsi_wbuf__printf(o, "</text>\n<text id=\"reset\" class=\"button\" x=\"%d\" y=\"24\" style=\"opacity: 0.3\">Reset Zoom</text>\n"
			 "<text id=\"search\" class=\"button\" x=\"%d\" y=\"24\" text-anchor=\"end\">Search</text>\n"
			 "<text id=\"matched\" x=\"%d\" y=\"%u\" text-anchor=\"end\"> </text>\n"
			 "<text id=\"status\" x=\"%d\" y=\"%u\"> </text>\n",
		      PAD, IMG_WIDTH - PAD, IMG_WIDTH - PAD, svg->height - 10, PAD, svg->height - 10);
	return svg;
}

void ds_flame_svg__frame(struct ds_flame_svg *svg, const char *name, const char *title, const char *status,
			 const char *fill, double offset, double width, unsigned depth, bool kernel)
{
	struct dsi_wbuf *o = &svg->w;
	double x = PAD + offset * svg->scale, w = width * svg->scale;
	unsigned y = svg->height - BOTTOM - (depth + 1) * FRAME_H;

	dsi_wbuf__printf(o, "<g class=\"f\" data-o=\"%.0f\" data-s=\"%.0f\" data-d=\"%u\" data-k=\"%d\" data-n=\"",
		      offset, width, depth, kernel);
	dsi_wbuf__xml(o, name);
	if (status) {
		dsi_wbuf__puts(o, "\" data-t=\"");
		dsi_wbuf__xml(o, status);
	}
	dsi_wbuf__puts(o, "\"><title>");
	dsi_wbuf__xml(o, title);
	dsi_wbuf__printf(o, "</title><rect x=\"%.2f\" y=\"%u\" width=\"%.2f\" height=\"%u\" fill=\"%s\" rx=\"2\"/>"
			 "<text x=\"%.2f\" y=\"%u\">", x, y, w, FRAME_H - 1, fill, x + 3, y + 11);
	label(o, name, w);
	dsi_wbuf__puts(o, "</text></g>\n");
}

int ds_flame_svg__end(struct ds_flame_svg *svg)
{
	struct dsi_wbuf *o = &svg->w;
	int err;

	dsi_wbuf__printf(o, "<script type=\"text/ecmascript\"><![CDATA[\n'use strict';\nvar W = %d, PAD = %d;\n", IMG_WIDTH, PAD);
	dsi_wbuf__puts(o, script);
	dsi_wbuf__puts(o, "</svg>\n");
	err = dsi_wbuf__finish(o);
	free(svg);
	return err;
}
