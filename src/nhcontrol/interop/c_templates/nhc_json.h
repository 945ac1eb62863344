/* A small, strict reader of one JSON object per line whose values are numbers, arrays of
 * numbers or null (other values are skipped when their key is not asked for). Part of
 * nhcontrol's C export; licence: that of nhcontrol. No allocation; never reads past the
 * terminating NUL. */
#ifndef NHC_JSON_H
#define NHC_JSON_H

#define NHC_JSON_MAX_KEYS 8

typedef struct {
    const char *key;   /* the member name */
    double *out;       /* where its numbers go */
    int cap;           /* capacity of out */
    int scalar;        /* 1: a number (not an array) is expected */
    int count;         /* numbers read (-1: the member was absent) */
} nhc_json_field;

/* Parses line into the fields (nfields <= NHC_JSON_MAX_KEYS). Returns 0, or a positive code
 * with a message in *why: 1 malformed JSON, 2 a value of the wrong kind, 3 too many numbers,
 * 4 a non-finite number, 5 a repeated member. */
int nhc_json_line(const char *line, nhc_json_field *fields, int nfields, const char **why);

#endif
