/* service: the hotel participant described for the participant kit
 * (services/kit/pkit.h): its tables (holds, rooms), its pure decision
 * (hotel_logic.h), its saga commands (HoldRoom, the step; FreeRoom, the
 * compensation) and its admin methods (handlers.h). The kit does the rest. */
#ifndef SAGA_HOTEL_SERVICE_H
#define SAGA_HOTEL_SERVICE_H

#include "pkit.h"

/* The descriptor hoteld runs (static storage; its `sql` filled by the kit
 * at first use). */
extern const pkit_service hotel_service;

#endif
