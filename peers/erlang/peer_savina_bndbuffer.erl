%% savina_bndbuffer: Savina's bounded buffer. A manager process with a buffer of B items (an
%% Erlang queue), the idle consumers (a list) and the producers waiting for room (a queue).
%% Producer j makes item j*I + k (k = 0..I-1) after busy(K, item), sends {data, Item,
%% self()} to the manager and waits for `produce_more` before the next; after its last
%% item's produce_more it sends `producer_done`. The manager hands an item to an idle
%% consumer if there is one, else buffers it; it answers produce_more at once unless the
%% buffer is then full (B items), in which case the producer waits until an item leaves the
%% buffer. A consumer runs busy(K, item), adds the item to its sum and sends {available,
%% self()}; the manager gives it a buffered item if any (and lets a waiting producer go),
%% else marks it idle. The run ends when every producer is done, the buffer is empty and
%% every consumer idle: the manager tells the driver. Then each consumer answers `stop`
%% with its sum. Check: the sums add up to sum(0..P*I).
-module(peer_savina_bndbuffer).
-export([run/1]).

-record(m, {buffer, size = 0, cap, idle, nidle, consumers, waiting, producers, driver}).

producer(Manager, J, I, K) ->
    receive go -> ok end,
    produce(Manager, J * I, J * I + I, K).

produce(Manager, End, End, _) ->
    Manager ! producer_done;
produce(Manager, Item, End, K) ->
    _ = peer_savina:busy(K, Item),
    Manager ! {data, Item, self()},
    receive produce_more -> ok end,
    produce(Manager, Item + 1, End, K).

consumer(Manager, K, Sum) ->
    receive
        {data, Item} ->
            _ = peer_savina:busy(K, Item),
            Manager ! {available, self()},
            consumer(Manager, K, Sum + Item);
        {stop, From} ->
            From ! {sum, Sum}
    end.

manager(#m{producers = 0, size = 0, nidle = N, consumers = N, driver = Driver}) ->
    Driver ! bndbuffer_done;
manager(#m{buffer = Buf, size = Size, cap = Cap, idle = Idle, nidle = NIdle,
           waiting = Waiting, producers = Producers} = M) ->
    receive
        {data, Item, Producer} ->
            M2 = case Idle of
                     [C | Rest] ->
                         C ! {data, Item},
                         M#m{idle = Rest, nidle = NIdle - 1};
                     [] ->
                         M#m{buffer = queue:in(Item, Buf), size = Size + 1}
                 end,
            case M2#m.size >= Cap of
                true -> manager(M2#m{waiting = queue:in(Producer, Waiting)});
                false -> Producer ! produce_more, manager(M2)
            end;
        {available, C} when Size =:= 0 ->
            manager(M#m{idle = [C | Idle], nidle = NIdle + 1});
        {available, C} ->
            {{value, Item}, Buf2} = queue:out(Buf),
            C ! {data, Item},
            case queue:out(Waiting) of
                {{value, P}, Waiting2} ->
                    P ! produce_more,
                    manager(M#m{buffer = Buf2, size = Size - 1, waiting = Waiting2});
                {empty, _} ->
                    manager(M#m{buffer = Buf2, size = Size - 1})
            end;
        producer_done ->
            manager(M#m{producers = Producers - 1})
    end.

run(#{buffer := B, producers := P, consumers := C, items := I, cost := K}) ->
    Self = self(),
    Manager = spawn(fun() -> receive {consumers, Cs} -> ok end,
                             manager(#m{buffer = queue:new(), cap = B, idle = Cs,
                                        nidle = length(Cs), consumers = length(Cs),
                                        waiting = queue:new(), producers = P,
                                        driver = Self})
                    end),
    Consumers = [spawn(fun() -> consumer(Manager, K, 0) end) || _ <- lists:seq(1, C)],
    Manager ! {consumers, Consumers},
    Producers = [spawn(fun() -> producer(Manager, J, I, K) end) || J <- lists:seq(0, P - 1)],
    T0 = peer_savina:now_ns(),
    [Pr ! go || Pr <- Producers],
    receive bndbuffer_done -> ok end,
    Secs = peer_savina:secs_since(T0),
    [Cs ! {stop, Self} || Cs <- Consumers],
    Sum = lists:sum(peer_savina:await_all(sum, C)),
    N = P * I,
    Expected = N * max(N - 1, 0) div 2,
    Sum =:= Expected orelse
        peer_savina:fail("savina_bndbuffer: consumers summed ~p, expected ~p", [Sum, Expected]),
    {Secs, []}.
