%% savina_barber: Savina's sleeping barber. The customers are processes spawned before the
%% measured phase, one per haircut. The factory (random numbers from Rng(7)) sends customer
%% i to the waiting room as {enter, I, Pid} after busy(below(A) + 1, i); between two
%% arrivals it handles what came in: a customer the full room sent back ({returned, I,
%% Pid}) is sent again at once (and counted as a rejection), a {customer_done, I} is
%% counted. The room (a queue of at most S seats) hands the first waiting customer to the
%% barber whenever the barber is asleep; the barber (Rng(11)) cuts with
%% busy(below(H) + 1, id), tells the customer (`haircut_done`) and asks the room for the
%% next (`next`), falling asleep when the room is empty. Each customer tells the factory it
%% is done and ends. Once N customers are done the factory reports to the driver. Check: N
%% haircuts (done customers, and the barber's count); the returns are the extra
%% `rejections`.
-module(peer_savina_barber).
-export([run/1]).

customer(Factory, I) ->
    receive haircut_done -> Factory ! {customer_done, I} end.

%% Arrivals: the customers still to send, as [{I, Pid}].
factory(Room, Arrivals, Rng, A, N, Done, Rejections, Driver) ->
    case Arrivals of
        [{I, Pid} | Rest] ->
            {Cost, Rng2} = peer_savina:below(A, Rng),
            _ = peer_savina:busy(Cost + 1, I),
            Room ! {enter, I, Pid},
            {Done2, Rejections2} = drain(Room, Done, Rejections),
            factory(Room, Rest, Rng2, A, N, Done2, Rejections2, Driver);
        [] when Done =:= N ->
            Driver ! {factory_done, Done, Rejections};
        [] ->
            receive
                {returned, I, Pid} ->
                    Room ! {enter, I, Pid},
                    factory(Room, [], Rng, A, N, Done, Rejections + 1, Driver);
                {customer_done, _} ->
                    factory(Room, [], Rng, A, N, Done + 1, Rejections, Driver)
            end
    end.

%% Handles the messages already there, without waiting.
drain(Room, Done, Rejections) ->
    receive
        {returned, I, Pid} ->
            Room ! {enter, I, Pid},
            drain(Room, Done, Rejections + 1);
        {customer_done, _} ->
            drain(Room, Done + 1, Rejections)
    after 0 ->
            {Done, Rejections}
    end.

%% Seats: a queue of {I, Pid} of length Waiting =< S.
room(Barber, Factory, Seats, Waiting, S, Asleep) ->
    receive
        {enter, I, Pid} when Asleep ->
            Barber ! {cut, I, Pid},
            room(Barber, Factory, Seats, Waiting, S, false);
        {enter, I, Pid} when Waiting >= S ->
            Factory ! {returned, I, Pid},
            room(Barber, Factory, Seats, Waiting, S, Asleep);
        {enter, I, Pid} ->
            room(Barber, Factory, queue:in({I, Pid}, Seats), Waiting + 1, S, false);
        next ->
            case queue:out(Seats) of
                {{value, {I, Pid}}, Seats2} ->
                    Barber ! {cut, I, Pid},
                    room(Barber, Factory, Seats2, Waiting - 1, S, false);
                {empty, _} ->
                    room(Barber, Factory, Seats, 0, S, true)
            end;
        {stop, From} ->
            From ! {room_stopped, Waiting}
    end.

barber(Room, Rng, H, Cuts) ->
    receive
        {cut, I, Pid} ->
            {Cost, Rng2} = peer_savina:below(H, Rng),
            _ = peer_savina:busy(Cost + 1, I),
            Pid ! haircut_done,
            Room ! next,
            barber(Room, Rng2, H, Cuts + 1);
        {stop, From} ->
            From ! {haircuts, Cuts}
    end.

run(#{haircuts := N, seats := S, arrival_cost := A, haircut_cost := H}) ->
    Self = self(),
    Barber = spawn(fun() -> Room = receive {room, R} -> R end, barber(Room, 11, H, 0) end),
    Factory = spawn(fun() ->
                            {Room, Customers} = receive {start, R, Cs} -> {R, Cs} end,
                            factory(Room, Customers, 7, A, N, 0, 0, Self)
                    end),
    Room = spawn(fun() -> room(Barber, Factory, queue:new(), 0, S, true) end),
    Barber ! {room, Room},
    Customers = [{I, spawn(fun() -> customer(Factory, I) end)} || I <- lists:seq(0, N - 1)],
    T0 = peer_savina:now_ns(),
    Factory ! {start, Room, Customers},
    {Done, Rejections} = receive {factory_done, D, Rj} -> {D, Rj} end,
    Secs = peer_savina:secs_since(T0),
    Barber ! {stop, Self},
    Room ! {stop, Self},
    Cuts = receive {haircuts, C} -> C end,
    receive {room_stopped, _} -> ok end,
    {Done, Cuts} =:= {N, N} orelse
        peer_savina:fail("savina_barber: ~p customers done, ~p haircuts, expected ~p",
                         [Done, Cuts, N]),
    {Secs, [{rejections, Rejections}]}.
