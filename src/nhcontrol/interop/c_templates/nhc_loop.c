/* The closed-loop harness of an exported nhcontrol controller (and estimator): reads one JSON
 * object a line on stdin, {"t": ..., "x": [...], "xd": [...]} (state feedback) or
 * {"t": ..., "y": [...]} (with an estimator), and writes one line {"u": [...], "status": "..."}
 * for each ({"u": null, "status": "refused: ..."} for a line it cannot use); at the end of
 * the input {"summary": {"steps", "median_step_s", "max_step_s", "workspace_bytes"}} (and
 * "median_estimator_s", the estimator's share, with an estimator), the step times measured
 * with clock_gettime(CLOCK_MONOTONIC) around the control call (estimator update included) only. Part of nhcontrol's C export; licence: that of nhcontrol. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "nhc_json.h"
#include "nhc_loop_config.h"
#include "nhc_controller.h"
#if NHC_LOOP_ESTIMATOR
#include "nhc_estimator.h"
#endif

#define NHC_LOOP_LINE 65536
#define NHC_LOOP_MAX_TIMES 200000

static char line[NHC_LOOP_LINE];
static double times[NHC_LOOP_MAX_TIMES];
#if NHC_LOOP_ESTIMATOR
static double est_times[NHC_LOOP_MAX_TIMES];
#endif
static nhc_ctrl_workspace ctrl_ws;
#if NHC_LOOP_ESTIMATOR
static nhc_est_workspace est_ws;
#endif

static double nhc_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void nhc_sort(double *a, long len)
{
    long gap, i, j;
    for (gap = len / 2; gap > 0; gap /= 2)
        for (i = gap; i < len; i++) {
            const double v = a[i];
            for (j = i; j >= gap && a[j - gap] > v; j -= gap) a[j] = a[j - gap];
            a[j] = v;
        }
}

static void nhc_refuse(const char *why)
{
    printf("{\"u\": null, \"status\": \"refused: %s\"}\n", why);
}

int main(void)
{
    double t = 0.0, x[NHC_CTRL_NQ + 1], xd[NHC_CTRL_NQ + 1], u[NHC_CTRL_K + 1];
    double tmax = 0.0, median = 0.0;
    long steps = 0, kept = 0, i;
    int c;
#if NHC_LOOP_ESTIMATOR
    double y[NHC_EST_NY + 1], u_prev[NHC_CTRL_K + 1];
    nhc_json_field fields[2] = {{"t", NULL, 1, 1, -1}, {"y", NULL, NHC_EST_NY, 0, -1}};
    fields[0].out = &t;
    fields[1].out = y;
    nhc_est_init(&est_ws);
    nhc_est_initial_input(&est_ws, u_prev);
#else
    nhc_json_field fields[3] = {{"t", NULL, 1, 1, -1}, {"x", NULL, NHC_CTRL_NQ, 0, -1},
                                {"xd", NULL, NHC_CTRL_NQ, 0, -1}};
    fields[0].out = &t;
    fields[1].out = x;
    fields[2].out = xd;
#endif
    nhc_ctrl_init(&ctrl_ws);
    for (;;) {
        const char *why = "", *status = "";
        size_t len;
        int rc;
        double t0, t1;
#if NHC_LOOP_ESTIMATOR
        double tm;
#endif
        if (!fgets(line, (int)sizeof line, stdin)) break;
        len = strlen(line);
        if (len == sizeof line - 1 && line[len - 1] != '\n') {
            while ((c = getchar()) != EOF && c != '\n') { }
            nhc_refuse("line too long");
            continue;
        }
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' ')) line[--len] = 0;
        if (!len) continue;
        rc = nhc_json_line(line, fields, (int)(sizeof fields / sizeof fields[0]), &why);
        if (rc) { nhc_refuse(why); continue; }
#if NHC_LOOP_ESTIMATOR
        if (fields[0].count != 1 || fields[1].count != NHC_EST_NY) {
            nhc_refuse("each line needs \\\"t\\\" and \\\"y\\\" with the estimator's number of outputs");
            continue;
        }
        t0 = nhc_now();
        rc = nhc_est_update(&est_ws, t, y, u_prev, x, xd, &status);
        tm = nhc_now();
        if (!rc) rc = nhc_ctrl_step(&ctrl_ws, t, x, xd, u, &status);
        t1 = nhc_now();
        if (!rc && kept < NHC_LOOP_MAX_TIMES) est_times[kept] = tm - t0;
        if (!rc) for (i = 0; i < NHC_CTRL_K; i++) u_prev[i] = u[i];
#else
        if (fields[0].count != 1 || fields[1].count != NHC_CTRL_NQ || fields[2].count != NHC_CTRL_NQ) {
            nhc_refuse("each line needs \\\"t\\\", \\\"x\\\" and \\\"xd\\\" with the model's number of coordinates");
            continue;
        }
        t0 = nhc_now();
        rc = nhc_ctrl_step(&ctrl_ws, t, x, xd, u, &status);
        t1 = nhc_now();
#endif
        if (rc) {
            printf("{\"u\": null, \"status\": \"%s\"}\n", status);
            continue;
        }
        printf("{\"u\": [");
        for (i = 0; i < NHC_CTRL_K; i++) printf("%s%.17g", i ? ", " : "", u[i]);
        printf("], \"status\": \"%s\"}\n", status);
        if (kept < NHC_LOOP_MAX_TIMES) times[kept++] = t1 - t0;
        if (t1 - t0 > tmax) tmax = t1 - t0;
        steps++;
    }
    if (kept) {
        nhc_sort(times, kept);
        median = (kept % 2) ? times[kept / 2] : 0.5 * (times[kept / 2 - 1] + times[kept / 2]);
    }
    printf("{\"summary\": {\"steps\": %ld, \"median_step_s\": %.9g, \"max_step_s\": %.9g, "
           "\"workspace_bytes\": %lu", steps, median, tmax, (unsigned long)NHC_LOOP_WORKSPACE_BYTES);
#if NHC_LOOP_ESTIMATOR
    if (kept) {
        nhc_sort(est_times, kept);
        median = (kept % 2) ? est_times[kept / 2] : 0.5 * (est_times[kept / 2 - 1] + est_times[kept / 2]);
    }
    printf(", \"median_estimator_s\": %.9g", median);
#endif
    printf("}}\n");
    return 0;
}
