//go:build llamacpp

#include "capture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml-backend.h"

// Implemented in Go (hook.go); called only when a hook is installed.
extern void lessimGoHook(uintptr_t handle, int kind, int block);

int64_t lessim_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int32_t lessim_decode(struct llama_context * ctx, struct llama_batch batch, int64_t * start_ns, int64_t * wall_ns, int64_t * cpu_ns) {
    int64_t c0 = thread_cpu_ns();
    int64_t w0 = lessim_now_ns();
    int32_t rc = llama_decode(ctx, batch);
    *wall_ns = lessim_now_ns() - w0;
    *cpu_ns = thread_cpu_ns() - c0;
    *start_ns = w0;
    return rc;
}

static char last_error[512];

void lessim_log_quiet(enum ggml_log_level level, const char * text, void * user_data) {
    (void)user_data;
    if (level != GGML_LOG_LEVEL_ERROR || text == NULL) {
        return;
    }
    // Keep the error lines since the last lessim_clear_last_error, joined by
    // "; ", so Go can put llama.cpp's reason (not just its last line) in errors.
    size_t n = strlen(last_error);
    for (const char * p = text; *p && n + 3 < sizeof(last_error); p++) {
        if (*p == '\n' || *p == '\r') {
            if (n > 0 && p[1] != 0 && last_error[n - 1] != ' ') {
                last_error[n++] = ';';
                last_error[n++] = ' ';
            }
            continue;
        }
        last_error[n++] = *p;
    }
    if (n > 0 && last_error[n - 1] != ' ' && n + 3 < sizeof(last_error)) {
        last_error[n++] = ';';
        last_error[n++] = ' ';
    }
    last_error[n] = 0;
}

void lessim_log_stderr(enum ggml_log_level level, const char * text, void * user_data) {
    lessim_log_quiet(level, text, user_data);
    fputs(text, stderr);
}

const char * lessim_last_error(void) {
    size_t n = strlen(last_error);
    while (n > 0 && (last_error[n - 1] == ' ' || last_error[n - 1] == ';')) {
        last_error[--n] = 0;
    }
    return last_error;
}
void lessim_clear_last_error(void) { last_error[0] = 0; }

lessim_capture * lessim_capture_new(int n_block, int n_embd, int n_expert, int n_used, int cap_tokens, bool want_input) {
    lessim_capture * c = calloc(1, sizeof(lessim_capture));
    if (c == NULL) {
        return NULL;
    }
    c->n_block = n_block;
    c->n_embd = n_embd;
    c->n_expert = n_expert;
    c->n_used = n_used;
    c->cap_tokens = cap_tokens;
    c->want_input = want_input;
    size_t per = (size_t)n_block * (size_t)cap_tokens;
    if (want_input) {
        c->input = malloc(per * (size_t)n_embd * sizeof(float));
    }
    c->logits = malloc(per * (size_t)n_expert * sizeof(float));
    c->topk = malloc(per * (size_t)n_used * sizeof(int32_t));
    c->weights = malloc(3 * per * (size_t)n_used * sizeof(float));
    c->rows = calloc((size_t)n_block * LX_NKIND, sizeof(int32_t));
    c->t_ns = calloc((size_t)n_block, sizeof(int64_t));
    if ((want_input && c->input == NULL) || c->logits == NULL || c->topk == NULL ||
        c->weights == NULL || c->rows == NULL || c->t_ns == NULL) {
        lessim_capture_free(c);
        return NULL;
    }
    return c;
}

void lessim_capture_free(lessim_capture * c) {
    if (c == NULL) {
        return;
    }
    free(c->input);
    free(c->logits);
    free(c->topk);
    free(c->weights);
    free(c->rows);
    free(c->t_ns);
    free(c);
}

void lessim_capture_reset(lessim_capture * c) {
    memset(c->rows, 0, (size_t)c->n_block * LX_NKIND * sizeof(int32_t));
    memset(c->t_ns, 0, (size_t)c->n_block * sizeof(int64_t));
    c->err[0] = 0;
}

// match parses "<prefix>-<block>" and returns the capture kind, or -1.
static int match(const char * name, int * block) {
    // Every wanted name starts with "ffn_moe_w", "ffn_moe_l" or "ffn_moe_t":
    // reject the other ~95% of graph nodes with one compare.
    if (strncmp(name, "ffn_moe_", 8) != 0) {
        return -1;
    }
    // NB: views of a named tensor get names like "ffn_moe_weights_norm-3 (reshaped)":
    // the suffix after the last '-' must be digits only.
    const char * dash = strrchr(name, '-');
    if (dash == NULL || dash[1] == 0) {
        return -1;
    }
    int b = 0;
    for (const char * p = dash + 1; *p; p++) {
        if (*p < '0' || *p > '9' || b > 100000) {
            return -1;
        }
        b = b * 10 + (*p - '0');
    }
    size_t n = (size_t)(dash - name);
    const char * s = name + 8;
    size_t m = n - 8;
    int kind = -1;
    if (m == 6 && memcmp(s, "logits", 6) == 0) {
        kind = LX_LOGITS;
    } else if (m == 4 && memcmp(s, "topk", 4) == 0) {
        kind = LX_TOPK;
    } else if (m == 7 && memcmp(s, "weights", 7) == 0) {
        kind = LX_W_RAW;
    } else if (m == 15 && memcmp(s, "weights_softmax", 15) == 0) {
        kind = LX_W_SOFTMAX;
    } else if (m == 12 && memcmp(s, "weights_norm", 12) == 0) {
        kind = LX_W_NORM;
    } else {
        return -1;
    }
    *block = b;
    return kind;
}

static void fail(lessim_capture * c, const char * name, const char * why) {
    if (c->err[0] == 0) {
        snprintf(c->err, sizeof(c->err), "capture %s: %s", name, why);
    }
}

// copy_rows appends tensor t (element type want) to dst as rows of width
// elements. It walks rows by the tensor's strides, because views such as
// ffn_moe_topk are not contiguous.
static void copy_rows(lessim_capture * c, struct ggml_tensor * t, enum ggml_type want, int width,
                      void * base, int block, int kind, const char * label) {
    if (t->type != want) {
        fail(c, label, "unexpected element type");
        return;
    }
    int64_t nel = ggml_nelements(t);
    if (width <= 0 || nel % width != 0) {
        fail(c, label, "element count is not a multiple of the row width");
        return;
    }
    int rows = (int)(nel / width);
    int32_t * have = &c->rows[block * LX_NKIND + kind];
    if (*have + rows > c->cap_tokens) {
        fail(c, label, "more token rows than the capture capacity (batch size)");
        return;
    }
    size_t es = ggml_type_size(want);
    char * dst = (char *)base + ((size_t)block * (size_t)c->cap_tokens + (size_t)*have) * (size_t)width * es;
    size_t row_bytes = (size_t)t->ne[0] * es;
    ggml_backend_buffer_t buf = t->view_src ? t->view_src->buffer : t->buffer;
    bool host = buf != NULL && ggml_backend_buffer_is_host(buf);
    if (host && ggml_is_contiguous(t)) {
        memcpy(dst, t->data, (size_t)nel * es);
    } else {
        for (int64_t i3 = 0; i3 < t->ne[3]; i3++) {
            for (int64_t i2 = 0; i2 < t->ne[2]; i2++) {
                for (int64_t i1 = 0; i1 < t->ne[1]; i1++) {
                    size_t off = (size_t)(i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3]);
                    if (host) {
                        memcpy(dst, (const char *)t->data + off, row_bytes);
                    } else {
                        ggml_backend_tensor_get(t, dst, off, row_bytes);
                    }
                    dst += row_bytes;
                }
            }
        }
    }
    *have += rows;
    c->n_calls++;
}

bool lessim_cb_eval(struct ggml_tensor * t, bool ask, void * user_data) {
    lessim_capture * c = (lessim_capture *)user_data;
    int block = -1;
    int kind = match(t->name, &block);
    if (kind < 0 || block < 0 || block >= c->n_block) {
        return false; // also on ask == false: never stop the graph
    }
    if (ask) {
        return true;
    }
    size_t per = (size_t)c->n_block * (size_t)c->cap_tokens * (size_t)c->n_used;
    switch (kind) {
    case LX_LOGITS:
        c->t_ns[block] = lessim_now_ns();
        copy_rows(c, t, GGML_TYPE_F32, c->n_expert, c->logits, block, LX_LOGITS, t->name);
        // NB: the router input is src[1] of the router matmul; it stays allocated
        // until the expert matmuls that also read it, so it is intact here.
        if (c->want_input) {
            struct ggml_tensor * x = t->op == GGML_OP_MUL_MAT ? t->src[1] : NULL;
            if (x == NULL) {
                fail(c, t->name, "router logits are not a plain matmul: router input unavailable");
            } else {
                copy_rows(c, x, GGML_TYPE_F32, c->n_embd, c->input, block, LX_INPUT, t->name);
            }
        }
        if (c->hook) {
            lessimGoHook(c->hook, LX_LOGITS, block);
        }
        break;
    case LX_TOPK:
        copy_rows(c, t, GGML_TYPE_I32, c->n_used, c->topk, block, LX_TOPK, t->name);
        if (c->hook) {
            lessimGoHook(c->hook, LX_TOPK, block);
        }
        break;
    default:
        copy_rows(c, t, GGML_TYPE_F32, c->n_used, c->weights + (size_t)(kind - LX_W_RAW) * per, block, kind, t->name);
        break;
    }
    return true;
}
