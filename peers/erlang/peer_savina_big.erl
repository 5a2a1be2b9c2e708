%% savina_big: Savina's big. W processes; process i draws its peers from Rng(i + 1): it
%% sends {ping, self()} to peer below(W) (itself included), waits for `pong` while answering
%% every {ping, From} it gets with From ! pong, and repeats until N pongs came back; then it
%% reports {done, Pongs} to the driver (the sink) and keeps answering pings until `stop`.
%% Check: W reports, W*N pongs in all.
-module(peer_savina_big).
-export([run/1]).

actor(Seed, N, Driver) ->
    receive {peers, Peers} -> ok end,
    receive go -> ok end,
    Rng = ping_next(Peers, Seed),
    loop(Peers, Rng, 0, N, Driver).

ping_next(Peers, Rng) ->
    {I, Rng2} = peer_savina:below(tuple_size(Peers), Rng),
    element(I + 1, Peers) ! {ping, self()},
    Rng2.

loop(Peers, Rng, Pongs, N, Driver) ->
    receive
        {ping, From} ->
            From ! pong,
            loop(Peers, Rng, Pongs, N, Driver);
        pong when Pongs + 1 =:= N ->
            Driver ! {done, N},
            serve();
        pong ->
            loop(Peers, ping_next(Peers, Rng), Pongs + 1, N, Driver)
    end.

%% Done pinging: answers the others' pings until `stop`.
serve() ->
    receive
        {ping, From} -> From ! pong, serve();
        stop -> ok
    end.

run(#{actors := W, pings := N}) ->
    Self = self(),
    Actors = [spawn(fun() -> actor(I + 1, N, Self) end) || I <- lists:seq(0, W - 1)],
    Peers = list_to_tuple(Actors),
    [A ! {peers, Peers} || A <- Actors],
    T0 = peer_savina:now_ns(),
    [A ! go || A <- Actors],
    Pongs = lists:sum(peer_savina:await_all(done, W)),
    Secs = peer_savina:secs_since(T0),
    [A ! stop || A <- Actors],
    Pongs =:= W * N orelse
        peer_savina:fail("savina_big: ~p pongs, expected ~p", [Pongs, W * N]),
    {Secs, []}.
