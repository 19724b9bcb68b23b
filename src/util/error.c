/*
** error.c — the a2m_error helpers (see error.h).
*/
#include <stdarg.h>
#include <stdio.h>

#include "util/error.h"

void a2m_error_clear(a2m_error *err)
{
	if (!err)
		return;
	err->code = 0;
	err->message[0] = '\0';
	json_decref(err->data);
	err->data = NULL;
}

int a2m_error_set(a2m_error *err, int code, const char *fmt, ...)
{
	if (!err)
		return code;
	a2m_error_clear(err);
	err->code = code;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof err->message, fmt, ap);
	va_end(ap);
	return code;
}

int a2m_error_data(a2m_error *err, json_t *data)
{
	if (!err) {
		json_decref(data);
		return 0;
	}
	json_decref(err->data);
	err->data = data;
	return err->code;
}
