#include "service.h"

#include "handlers.h"
#include "hotel_logic.h"
#include "sagas/v1/hotel.pb-c.h"
#include "schema_sql.h"

/* The advisory lock key that serialises schema application ("hotelsch"). */
#define HOTEL_SCHEMA_LOCK_KEY "7525361481319408488"
/* The version of sql/schema.sql (docs/operations.md, "Upgrading"): raise it
 * with every change of the schema. */
#define HOTEL_SCHEMA_VERSION 1

/* HoldRoom and FreeRoom carry the same fields (saga_id, room, nights):
 * text[0] = room (the row's key), num[0] = nights. */
#define HOTEL_FIELDS {{"room", true, 0, 0, NULL}, {"nights", false, 1, HOTEL_NIGHTS_MAX, NULL}}, 2

static const pkit_method hotel_methods[] = {
    {METHOD_Hotel_HoldRoom, HOTEL_OP_HOLD, "hold room", "hold",
        &sagas__v1__hold_room_request__descriptor, HOTEL_FIELDS,
        &sagas__v1__hold_room_reply__descriptor, "free", NULL},
    {METHOD_Hotel_FreeRoom, HOTEL_OP_FREE, "free room", "free",
        &sagas__v1__free_room_request__descriptor, HOTEL_FIELDS,
        &sagas__v1__free_room_reply__descriptor, NULL, NULL},
};

static const pkit_refusal hotel_refusals[] = {
    {REASON_NO_VACANCY, "no vacancy", true},
    {REASON_UNKNOWN_ROOM, "unknown room", true},
};

static pkit_sql hotel_sql;

const pkit_service hotel_service = {
    .name = "hotel",
    .schema = {.what = "hotel",
        .sql = hotel_schema_sql,
        .lock_key = HOTEL_SCHEMA_LOCK_KEY,
        .version = HOTEL_SCHEMA_VERSION,
        .prog = "hoteld"},
    .records = "holds",
    .text_cols = {"room"},
    .n_text = 1,
    .num_cols = {"nights"},
    .n_num = 1,
    .rows = "rooms",
    .row_key = "room",
    .row_value = "free",
    .fast_op = HOTEL_OP_HOLD,
    .decide = hotel_decide,
    .status_name = hotel_status_name,
    .status_parse = hotel_status_parse,
    .methods = hotel_methods,
    .n_methods = sizeof hotel_methods / sizeof hotel_methods[0],
    .others = hotel_admin_methods,
    .n_others = HOTEL_ADMIN_METHODS,
    .refusals = hotel_refusals,
    .n_refusals = sizeof hotel_refusals / sizeof hotel_refusals[0],
    .args_name = "room or nights",
    .value_name = "free",
    .sql = &hotel_sql,
};
