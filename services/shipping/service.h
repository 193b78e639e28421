/* service: the shipping participant described for the participant kit
 * (services/kit/pkit.h): its records table (shipments; it has no rows), its pure
 * decision (shipping_decide), its saga command (ShipOrder, the retriable
 * step after the pivot: no compensation) and its admin method. The kit does
 * the rest. This is the worked example of docs/participants.md. */
#ifndef SAGA_SHIPPING_SERVICE_H
#define SAGA_SHIPPING_SERVICE_H

#include "pkit.h"
#include "shipping_logic.h"

extern const pkit_service shipping_service;

#endif
