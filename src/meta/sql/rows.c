/* Multi-row statement texts, made at run time (sql.h): one builder for every
 * statement file's batched INSERT, so their shape is written once. */
#include "meta/sql/sql.h"

#include <stdlib.h>
#include <string.h>

char *cn__sql_rows_text(const char *head, const char *row, const char *tail, uint32_t rows,
                        uint32_t max)
{
    if (rows < 1 || rows > max)
        return NULL;
    size_t h = strlen(head), r = strlen(row), t = strlen(tail);
    char *sql = malloc(h + (size_t)rows * r + t + 1);
    if (!sql)
        return NULL;
    char *w = sql + h;
    memcpy(sql, head, h);
    memcpy(w, row + 2, r - 2); /* the first row without its ", " */
    w += r - 2;
    for (uint32_t i = 1; i < rows; i++, w += r)
        memcpy(w, row, r);
    memcpy(w, tail, t + 1);
    return sql;
}
