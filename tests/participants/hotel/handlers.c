/* handlers: the hotel participant's admin methods (SetRooms, ListRooms);
 * its saga commands are served by the participant kit (service.c). */
#include "handlers.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "log.h"
#include "sagas/v1/hotel.pb-c.h"
#include "store.h"
#include "valid.h"

static void hotel_set(pkit_store *st, const rpc_request *call, rpc_reply *r)
{
	Sagas__V1__SetRoomsRequest *req = (Sagas__V1__SetRoomsRequest *)rpc_unpack(
	    &sagas__v1__set_rooms_request__descriptor, call, r);
	if (req == NULL)
		return;
	if (!pkit_check_name(r, "room", req->room)
	    || !pkit_check_range(r, "free", req->free, 0, VALID_AMOUNT_MAX, NULL))
		goto out_free;
	int rc = hotel_store_set(st, req->room, req->free);
	if (rc != 0) {
		pkit_store_failed(r, rc, "set rooms", NULL);
		goto out_free;
	}
	log_info(NULL, "set rooms room=%s free %" PRId64, req->room, req->free);
	Sagas__V1__SetRoomsReply rep = SAGAS__V1__SET_ROOMS_REPLY__INIT;
	rep.free = req->free;
	rpc_reply_ok(r, &rep.base);
out_free:
	sagas__v1__set_rooms_request__free_unpacked(req, NULL);
}

static void hotel_list(pkit_store *st, const rpc_request *call, rpc_reply *r)
{
	bool include;
	int32_t limit;
	if (!pkit_list_request(&sagas__v1__list_rooms_request__descriptor, "include_holds",
	        HOTEL_LIST_LIMIT_DEFAULT, HOTEL_LIST_LIMIT_MAX, call, &include, &limit, r))
		return;
	hotel_listing l;
	int rc = hotel_store_list(st, include, limit, &l);
	if (rc != 0) {
		pkit_store_failed(r, rc, "list rooms", NULL);
		return;
	}
	Sagas__V1__RoomKind *kinds = calloc(l.n_rooms + 1, sizeof *kinds);
	Sagas__V1__RoomKind **kind_ptrs = calloc(l.n_rooms + 1, sizeof *kind_ptrs);
	Sagas__V1__RoomHold *holds = calloc(l.n_holds + 1, sizeof *holds);
	Sagas__V1__RoomHold **hold_ptrs = calloc(l.n_holds + 1, sizeof *hold_ptrs);
	if (kinds == NULL || kind_ptrs == NULL || holds == NULL || hold_ptrs == NULL) {
		pkit_store_failed(r, -ENOMEM, "list rooms", NULL);
		goto out_free;
	}
	Sagas__V1__ListRoomsReply rep = SAGAS__V1__LIST_ROOMS_REPLY__INIT;
	for (size_t i = 0; i < l.n_rooms; i++) {
		Sagas__V1__RoomKind init = SAGAS__V1__ROOM_KIND__INIT;
		kinds[i] = init;
		kinds[i].room = l.rooms[i].room;
		kinds[i].free = l.rooms[i].free;
		kinds[i].live_holds = l.rooms[i].live_holds;
		kind_ptrs[i] = &kinds[i];
	}
	rep.n_rooms = l.n_rooms;
	rep.rooms = kind_ptrs;
	size_t bytes = sagas__v1__list_rooms_reply__get_packed_size(&rep) + 2;
	size_t n = 0;
	for (; n < l.n_holds; n++) {
		Sagas__V1__RoomHold init = SAGAS__V1__ROOM_HOLD__INIT;
		holds[n] = init;
		holds[n].saga_id = l.holds[n].saga_id;
		holds[n].room = l.holds[n].room;
		holds[n].nights = l.holds[n].nights;
		holds[n].status = (Sagas__V1__HoldStatus)l.holds[n].status;
		if (!pkit_page_fits(&bytes, &holds[n].base))
			break;
		hold_ptrs[n] = &holds[n];
	}
	rep.n_holds = n;
	rep.holds = hold_ptrs;
	rep.holds_truncated = l.holds_truncated || n < l.n_holds;
	rpc_reply_ok(r, &rep.base);
out_free:
	free(kinds);
	free(kind_ptrs);
	free(holds);
	free(hold_ptrs);
	hotel_listing_free(&l);
}

const pkit_other_method hotel_admin_methods[HOTEL_ADMIN_METHODS] = {
    {METHOD_Hotel_SetRooms, hotel_set},
    {METHOD_Hotel_ListRooms, hotel_list},
};

/* What a batch frame may carry: the saga commands, the table's BATCH rows
 * (methods.h). */
static const char *const hotel_batch_methods[] = {METHODS_Hotel(METHOD_BATCH_PATH) NULL};

const rpc_server_ops hotel_rpc_ops = PKIT_RPC_OPS(hotel_batch_methods);
