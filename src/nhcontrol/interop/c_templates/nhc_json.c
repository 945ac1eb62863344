/* One-line JSON reader (see nhc_json.h). Part of nhcontrol's C export; licence: that of
 * nhcontrol. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "nhc_json.h"

static const char *nhc_ws(const char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n') s++;
    return s;
}

/* a JSON number (the grammar of RFC 8259, checked before strtod converts it) */
static const char *nhc_number(const char *s, double *v)
{
    const char *p = s;
    char buf[64];
    size_t len;
    if (*p == '-') p++;
    if (*p == '0') p++;
    else if (*p >= '1' && *p <= '9') { while (*p >= '0' && *p <= '9') p++; }
    else return NULL;
    if (*p == '.') {
        p++;
        if (!(*p >= '0' && *p <= '9')) return NULL;
        while (*p >= '0' && *p <= '9') p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!(*p >= '0' && *p <= '9')) return NULL;
        while (*p >= '0' && *p <= '9') p++;
    }
    len = (size_t)(p - s);
    if (len >= sizeof buf) return NULL;
    memcpy(buf, s, len);
    buf[len] = 0;
    *v = strtod(buf, NULL);
    return p;
}

/* a string (escapes allowed and skipped); its body in [*b, *e) */
static const char *nhc_string(const char *s, const char **b, const char **e)
{
    if (*s != '"') return NULL;
    s++;
    *b = s;
    while (*s && *s != '"') {
        if ((unsigned char)*s < 0x20) return NULL;
        if (*s == '\\') {
            s++;
            if (!*s) return NULL;
        }
        s++;
    }
    if (*s != '"') return NULL;
    *e = s;
    return s + 1;
}

/* skip any value (nested arrays/objects up to a small depth) */
static const char *nhc_skip(const char *s, int depth)
{
    const char *b, *e;
    double v;
    s = nhc_ws(s);
    if (depth > 16) return NULL;
    if (*s == '"') return nhc_string(s, &b, &e);
    if (*s == '[' || *s == '{') {
        const char close = *s == '[' ? ']' : '}';
        const int obj = *s == '{';
        s = nhc_ws(s + 1);
        if (*s == close) return s + 1;
        for (;;) {
            if (obj) {
                s = nhc_string(nhc_ws(s), &b, &e);
                if (!s) return NULL;
                s = nhc_ws(s);
                if (*s != ':') return NULL;
                s++;
            }
            s = nhc_skip(s, depth + 1);
            if (!s) return NULL;
            s = nhc_ws(s);
            if (*s == ',') { s++; continue; }
            if (*s == close) return s + 1;
            return NULL;
        }
    }
    if (!strncmp(s, "true", 4)) return s + 4;
    if (!strncmp(s, "false", 5)) return s + 5;
    if (!strncmp(s, "null", 4)) return s + 4;
    return nhc_number(s, &v);
}

int nhc_json_line(const char *line, nhc_json_field *fields, int nfields, const char **why)
{
    const char *s = nhc_ws(line);
    int i;
    for (i = 0; i < nfields; i++) fields[i].count = -1;
    if (*s != '{') { *why = "not a JSON object"; return 1; }
    s = nhc_ws(s + 1);
    if (*s == '}') { s++; goto end; }
    for (;;) {
        const char *b, *e;
        nhc_json_field *f = NULL;
        s = nhc_string(s, &b, &e);
        if (!s) { *why = "expected a member name in double quotes"; return 1; }
        for (i = 0; i < nfields; i++)
            if (strlen(fields[i].key) == (size_t)(e - b) && !strncmp(fields[i].key, b, (size_t)(e - b)))
                f = &fields[i];
        s = nhc_ws(s);
        if (*s != ':') { *why = "expected ':' after a member name"; return 1; }
        s = nhc_ws(s + 1);
        if (!f) {
            s = nhc_skip(s, 0);
            if (!s) { *why = "malformed value"; return 1; }
        } else {
            double v;
            if (f->count >= 0) { *why = "a member appears twice"; return 5; }
            f->count = 0;
            if (*s == '[') {
                if (f->scalar) { *why = "expected a number, got an array"; return 2; }
                s = nhc_ws(s + 1);
                if (*s == ']') s++;
                else for (;;) {
                    s = nhc_number(s, &v);
                    if (!s) { *why = "arrays must hold numbers only"; return 2; }
                    if (f->count >= f->cap) { *why = "an array holds too many numbers"; return 3; }
                    if (!isfinite(v)) { *why = "a number is out of range"; return 4; }
                    f->out[f->count++] = v;
                    s = nhc_ws(s);
                    if (*s == ',') { s = nhc_ws(s + 1); continue; }
                    if (*s == ']') { s++; break; }
                    *why = "expected ',' or ']' in an array";
                    return 1;
                }
            } else {
                s = nhc_number(s, &v);
                if (!s) { *why = "expected a number or an array of numbers"; return 2; }
                if (!f->scalar) { *why = "expected an array, got a number"; return 2; }
                if (!isfinite(v)) { *why = "a number is out of range"; return 4; }
                f->out[0] = v;
                f->count = 1;
            }
        }
        s = nhc_ws(s);
        if (*s == ',') { s = nhc_ws(s + 1); continue; }
        if (*s == '}') { s++; break; }
        *why = "expected ',' or '}' in the object";
        return 1;
    }
end:
    s = nhc_ws(s);
    if (*s) { *why = "text after the object"; return 1; }
    return 0;
}
